import Foundation
import SharedState
import SyncClient
import Testing

/// The client-side buffer of one watch: handed over as is while the consumer keeps up, folded
/// into the latest change of each key when it does not.
@Suite struct WatchBufferTests {
    private func put(_ key: String, _ json: String, at revision: UInt64) -> Change {
        .put(Entry(key: key, value: Data(json.utf8), version: 1, createRevision: revision, modRevision: revision))
    }

    private func changes(_ revision: UInt64, _ changes: Change...) -> WatchBatch {
        WatchBatch(kind: .changes, revision: revision, changes: changes)
    }

    @Test func aConsumerThatKeepsUpGetsEveryBatchAsItIs() async throws {
        let buffer = WatchBuffer()
        var iterator = WatchStream(buffer: buffer).makeAsyncIterator()
        for revision in UInt64(1)...5 {
            buffer.yield(changes(revision, put("k", "\(revision)", at: revision)))
            let batch = try await iterator.next()
            #expect(batch == changes(revision, put("k", "\(revision)", at: revision)))
        }
        #expect(buffer.folds == 0)
    }

    @Test func aHoldingBufferGivesABatchOnlyOnceItsRevisionIsReleased() async throws {
        let buffer = WatchBuffer(holdsUntilReleased: true)
        var iterator = WatchStream(buffer: buffer).makeAsyncIterator()
        buffer.yield(changes(1, put("k", "1", at: 1)))
        buffer.yield(changes(2, put("k", "2", at: 2)))
        buffer.release(through: 1)
        #expect(try await iterator.next()?.revision == 1)
        // Revision 2 waits for its release: the consumer waits with it, then gets it at once.
        async let second = iterator.next()
        try await Task.sleep(for: .milliseconds(50))
        #expect(buffer.hasWaitingConsumer)
        buffer.release(through: 2)
        #expect(try await second?.revision == 2)
        // The end releases what was given before it.
        var rest = WatchStream(buffer: buffer).makeAsyncIterator()
        buffer.yield(changes(3, put("k", "3", at: 3)))
        buffer.finish()
        #expect(try await rest.next()?.revision == 3)
        #expect(try await rest.next() == nil)
    }

    @Test func aSlowConsumerGetsTheLatestChangeOfEveryKeyAndEveryDeletion() async throws {
        var configuration = WatchBuffer.Configuration()
        configuration.maxPendingBytes = 4_096
        let buffer = WatchBuffer(configuration: configuration)
        var iterator = WatchStream(buffer: buffer).makeAsyncIterator()
        buffer.yield(WatchBatch(kind: .snapshot, revision: 0, changes: []))
        #expect(try await iterator.next()?.kind == .snapshot)
        // 10,000 revisions over 10 keys, while the consumer takes nothing; k3 ends deleted.
        for revision in UInt64(1)...10_000 {
            buffer.yield(changes(revision, put("k\(revision % 10)", "\(revision)", at: revision)))
        }
        buffer.yield(changes(10_001, .delete("k3", revision: 10_001)))
        #expect(buffer.folds == 1)
        let folded = try #require(try await iterator.next())
        #expect(folded.kind == .resync)
        #expect(folded.revision == 10_001)
        #expect(folded.changes.map(\.key) == (0...9).map { "k\($0)" })
        #expect(folded.changes.first { $0.key == "k3" }?.type == .delete)
        #expect(folded.changes.first { $0.key == "k7" }?.entry.value == Data("9997".utf8))
        // Then back to one batch per revision.
        buffer.yield(changes(10_002, put("k1", "x", at: 10_002)))
        #expect(try await iterator.next()?.revision == 10_002)
    }

    @Test func aFoldedChangeKeepsTheEntryBeforeTheFirstChangeItStandsFor() async throws {
        var configuration = WatchBuffer.Configuration()
        configuration.maxPendingBytes = 1_024
        let buffer = WatchBuffer(configuration: configuration)
        var iterator = WatchStream(buffer: buffer).makeAsyncIterator()
        buffer.yield(WatchBatch(kind: .snapshot, revision: 0, changes: []))
        _ = try await iterator.next()
        let first = put("k", "0", at: 1)
        buffer.yield(changes(1, first))
        for revision in UInt64(2)...100 {
            var change = put("k", "\(revision)", at: revision)
            change.previous = .entry(put("k", "\(revision - 1)", at: revision - 1).entry)
            buffer.yield(changes(revision, change))
        }
        let folded = try #require(try await iterator.next())
        #expect(folded.kind == .resync)
        #expect(folded.changes.count == 1)
        #expect(folded.changes.first?.entry.value == Data("100".utf8))
        // The first change made the key: the fold did too.
        #expect(folded.changes.first?.previous == first.previous)
    }

    @Test func aSnapshotNotYetTakenFoldsIntoASnapshot() async throws {
        var configuration = WatchBuffer.Configuration()
        configuration.maxPendingBytes = 1_024
        let buffer = WatchBuffer(configuration: configuration)
        let stream = WatchStream(buffer: buffer)
        buffer.yield(WatchBatch(kind: .snapshot, revision: 5, changes: [put("a", "1", at: 3), put("b", "1", at: 4)]))
        for revision in UInt64(6)...200 {
            var change = put("c", "\(revision)", at: revision)
            change.previous = revision == 6 ? .absent : .entry(put("c", "\(revision - 1)", at: revision - 1).entry)
            buffer.yield(changes(revision, change))
        }
        buffer.yield(changes(201, .delete("a", revision: 201)))
        var iterator = stream.makeAsyncIterator()
        let folded = try #require(try await iterator.next())
        #expect(folded.kind == .snapshot)
        #expect(folded.revision == 201)
        #expect(folded.changes.map(\.key) == ["b", "c"])
        // A snapshot carries no previous entries, folded or not.
        #expect(folded.changes.map(\.previous) == [.unknown, .unknown])
    }

    @Test func theStreamEndsWithTheErrorAfterWhatWasGiven() async throws {
        let buffer = WatchBuffer()
        buffer.yield(changes(1, put("a", "1", at: 1)))
        buffer.finish(throwing: SharedStateError(.compacted, "gone"))
        var iterator = WatchStream(buffer: buffer).makeAsyncIterator()
        #expect(try await iterator.next()?.revision == 1)
        await #expect(throws: SharedStateError.self) { try await iterator.next() }
        #expect(try await iterator.next() == nil)
    }

    @Test func droppingTheStreamEndsTheWatch() async {
        let buffer = WatchBuffer()
        let ended = AsyncStream.makeStream(of: Void.self)
        buffer.onTermination { ended.continuation.finish() }
        do {
            let stream = WatchStream(buffer: buffer)
            _ = stream.makeAsyncIterator()
        }
        for await _ in ended.stream {}
    }

    @Test func cancellingTheConsumerEndsTheWatch() async throws {
        let buffer = WatchBuffer()
        let ended = AsyncStream.makeStream(of: Void.self)
        buffer.onTermination { ended.continuation.finish() }
        let stream = WatchStream(buffer: buffer)
        let consumer = Task {
            for try await _ in stream {}
        }
        consumer.cancel()
        try await consumer.value
        for await _ in ended.stream {}
    }
}

extension WatchBufferTests {
    @Test func aSecondConsumerAtOnceGetsAnErrorInsteadOfHanging() async throws {
        let buffer = WatchBuffer()
        let stream = WatchStream(buffer: buffer)
        let first = Task {
            var iterator = stream.makeAsyncIterator()
            return try await iterator.next()
        }
        while !buffer.hasWaitingConsumer { await Task.yield() }
        var second = stream.makeAsyncIterator()
        await #expect(throws: SharedStateError.self) { try await second.next() }
        buffer.yield(changes(1, put("a", "1", at: 1)))
        #expect(try await first.value?.revision == 1)
    }
}
