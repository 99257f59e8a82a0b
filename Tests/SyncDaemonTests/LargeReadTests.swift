import Foundation
import SharedStateWire
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

/// Lists, snapshots and resyncs of more entries than the engine reads under its lock are read
/// from a copy of the key order, elsewhere: the writer goes on meanwhile, and what they return is
/// still exactly the state at their revision, followed by the changes after it.
@Suite struct LargeReadTests {
    /// Reads of more than two entries leave the lock.
    private let configuration = StateEngine.Configuration(entriesReadInPlace: 2)

    @Test func aLargeSnapshotIsTheStateAtItsRevisionAndTheChangesMadeMeanwhileFollowIt() async throws {
        try await withEngine(configuration: configuration) { engine in
            for key in ["a", "b", "c", "d"] { _ = await engine.put("s/\(key)", "1") }
            _ = await engine.put("other", "1")
            let subscriber = CollectingSubscriber()
            let catchUp = try #require(try engine.beginWatch(id: 1, prefixes: ["s/"], start: .snapshot, subscriber: subscriber))

            // The writer is not held up by the snapshot still to be read.
            _ = await engine.put("s/a", "2")
            _ = await engine.write(.delete(key: "s/b", ifVersion: nil))
            _ = await engine.put("s/e", "3")
            #expect(subscriber.received.isEmpty)

            try await engine.catchUp(catchUp)
            #expect(subscriber.received.first?.response.watch.revision == 5)
            let events = subscriber.events
            #expect(events.map(\.kind) == [.snapshot, .changes, .changes, .changes])
            #expect(events.map(\.revision) == [5, 6, 7, 8])
            #expect(events[0].changes.map(\.entry.key) == ["s/a", "s/b", "s/c", "s/d"])
            #expect(events[0].changes.map(\.entry.value) == Array(repeating: Data("1".utf8), count: 4))
            #expect(events[2].changes.map(\.type) == [.delete])

            // Live again afterwards.
            _ = await engine.put("s/f", "4")
            #expect(subscriber.events.last?.revision == 9)
        }
    }

    @Test func aSmallSnapshotIsSentAtOnce() async throws {
        try await withEngine(configuration: configuration) { engine in
            _ = await engine.put("s/a", "1")
            let subscriber = CollectingSubscriber()
            let catchUp = try engine.beginWatch(id: 1, prefixes: ["s/"], start: .snapshot, subscriber: subscriber)
            #expect(catchUp == nil)
            #expect(subscriber.events.map(\.kind) == [.snapshot])
        }
    }

    @Test func aLargeListIsTheStateAtItsRevision() async throws {
        try await withEngine(configuration: configuration) { engine in
            for key in ["a", "b", "c"] { _ = await engine.put("l/\(key)", "1") }
            guard case .tooLarge(let large) = engine.list(prefix: "l/", limit: nil) else {
                Issue.record("a list of three entries was read under the lock")
                return
            }
            _ = await engine.put("l/a", "2")
            _ = await engine.put("l/d", "2")
            let listing = large.read()
            #expect(listing.revision == 3)
            #expect(listing.entries.map(\.key) == ["l/a", "l/b", "l/c"])
            #expect(listing.entries.map(\.value) == Array(repeating: Data("1".utf8), count: 3))
            #expect(!listing.hasMore)

            guard case .listed(let limited) = engine.list(prefix: "l/", limit: 2) else {
                Issue.record("a list limited to two entries was not read at once")
                return
            }
            #expect(limited.entries.map(\.key) == ["l/a", "l/b"])
            #expect(limited.hasMore)
        }
    }

    @Test func aCountJudgesEachKeyOffTheLockOnlyWhenItMustJudgeMany() async throws {
        try await withEngine(configuration: configuration) { engine in
            for key in ["a", "b", "c", "hidden"] { _ = await engine.put("c/\(key)", "1") }
            // Without a filter, any number of keys is counted at once, by position.
            #expect(engine.count(prefix: "c/").counted == StateEngine.Counting(count: 4, revision: 4))
            let readable = KeyFilter(readablePrefixes: ["c/a", "c/b", "c/c"])
            #expect(engine.count(prefix: "c/h", readable: readable).counted == StateEngine.Counting(count: 0, revision: 4))
            guard case .tooLarge(let large) = engine.count(prefix: "c/", readable: readable) else {
                Issue.record("four keys were judged under the lock")
                return
            }
            _ = await engine.put("c/d", "2")
            #expect(large.count() == StateEngine.Counting(count: 3, revision: 4))
        }
    }

    @Test func aLargeResyncIsTheStateAtItsRevisionAndTheChangesMadeMeanwhileFollowIt() async throws {
        try await withEngine(configuration: configuration) { engine in
            let slow = CollectingSubscriber()
            try await engine.startWatch(id: 4, prefixes: ["s/"], start: .now, subscriber: slow)
            slow.isBacklogged = true
            for key in ["a", "b", "c"] { _ = await engine.put("s/\(key)", "1") }
            #expect(slow.events.isEmpty)

            slow.isBacklogged = false
            let resync = engine.resync(slow)
            #expect(resync.count == 1)
            let catchUp = try #require(resync.large.first)
            _ = await engine.put("s/a", "2")
            #expect(slow.events.isEmpty)

            try await engine.catchUp(catchUp)
            #expect(slow.events.map(\.kind) == [.resync, .changes])
            #expect(slow.events.map(\.revision) == [3, 4])
            #expect(slow.events[0].changes.map(\.entry.key) == ["s/a", "s/b", "s/c"])
            #expect(slow.events[0].changes[0].entry.value == Data("1".utf8))
        }
    }

    @Test func aWatchCancelledBeforeItsSnapshotIsReadGetsNothing() async throws {
        try await withEngine(configuration: configuration) { engine in
            for key in ["a", "b", "c"] { _ = await engine.put("s/\(key)", "1") }
            let subscriber = CollectingSubscriber()
            let catchUp = try #require(try engine.beginWatch(id: 1, prefixes: ["s/"], start: .snapshot, subscriber: subscriber))
            #expect(engine.cancelWatch(id: 1, of: subscriber))
            try await engine.catchUp(catchUp)
            #expect(subscriber.received.isEmpty)
        }
    }
}

extension StateEngine.CountOutcome {
    /// The count, when it was made at once.
    fileprivate var counted: StateEngine.Counting? {
        if case .counted(let counting) = self { return counting }
        return nil
    }
}
