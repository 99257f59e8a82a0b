import Foundation
import NIOEmbedded
import SharedStateWire
import Synchronization
import Testing

@testable import SyncEngine
@testable import SyncServer

/// The writes an event loop reads in one turn, from several connections, committed as one group
/// on the loop once the turn's reads are done.
@Suite struct TurnWritesTests {
    /// A connection's side of the answers: each commit's answers, as one call each.
    final class Answers: AnswerCollector {
        let commits = Mutex<[[WriteAnswer]]>([])
        func receive(_ answers: [WriteAnswer]) {
            commits.withLock { $0.append(answers) }
        }
        var requestIDs: [[UInt64]] { commits.withLock { $0.map { $0.map(\.requestID) } } }
    }

    private func puts(_ ids: ClosedRange<UInt64>, key: String, to target: Answers) -> [PendingWrite] {
        ids.map { id in
            PendingWrite(
                request: .put(key: key, value: Data("\(id)".utf8), ifVersion: nil), origin: .syncd(""), answering: id, to: target)
        }
    }

    @Test func theWritesOfOneTurnFromSeveralConnectionsCommitTogetherOnTheLoop() async throws {
        try await withEngine { engine in
            let loop = EmbeddedEventLoop()
            let turn = TurnWrites(eventLoop: loop, engine: engine)
            let (first, second) = (Answers(), Answers())
            var reads = puts(1...3, key: "a", to: first)
            turn.add(&reads)
            #expect(reads.isEmpty)
            reads = puts(4...5, key: "b", to: second)
            turn.add(&reads)
            // Nothing is handed over while the turn is still reading.
            #expect(engine.revision == 0)

            loop.run()
            // One group, committed on the loop: every revision is there once the task ran.
            #expect(engine.revision == 5)
            #expect(first.requestIDs == [[1, 2, 3]])
            #expect(second.requestIDs == [[4, 5]])
            #expect(engine.entry("a").entry?.value == Data("3".utf8))
            #expect(engine.entry("b").entry?.value == Data("5".utf8))

            // The next turn is a group of its own, in order after the first.
            reads = puts(6...6, key: "a", to: first)
            turn.add(&reads)
            loop.run()
            #expect(first.requestIDs == [[1, 2, 3], [6]])
            #expect(engine.entry("a").entry?.version == 4)
            #expect(engine.entry("a").entry?.modRevision == 6)
            try await loop.shutdownGracefully()
        }
    }

    @Test func aTurnLargerThanAGroupCommitsInGroupsInOrder() async throws {
        try await withEngine(configuration: .init(maxWritesPerCommit: 4)) { engine in
            let loop = EmbeddedEventLoop()
            let turn = TurnWrites(eventLoop: loop, engine: engine)
            let answers = Answers()
            var reads = puts(1...10, key: "k", to: answers)
            turn.add(&reads)
            loop.run()
            #expect(engine.revision == 10)
            #expect(answers.requestIDs == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10]])
            #expect(engine.entry("k").entry?.version == 10)
            try await loop.shutdownGracefully()
        }
    }
}
