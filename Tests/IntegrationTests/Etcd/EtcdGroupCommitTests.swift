import Foundation
import Testing

@testable import EtcdClient

/// Group commit: which transactions may go to etcd together (without etcd), and that a group
/// keeps each member's outcome (on a real 3-member cluster).
@Suite(.timeLimit(.minutes(2)))
struct EtcdGroupCommitTests {
    private typealias Queue = GroupCommitQueue<String>

    private static func put(_ key: String, bytes: Int = 1) -> GroupCommitFootprint {
        GroupCommitFootprint(EtcdTransaction(success: [.put(key: Data(key.utf8), value: Data(repeating: 0x31, count: bytes))]))
    }

    /// The group `queue` says to send, failing the test when it says to wait.
    private static func sent(_ group: Queue.Group?, sourceLocation: SourceLocation = #_sourceLocation) throws -> Queue.Group {
        try #require(group, "expected a group to send", sourceLocation: sourceLocation)
    }

    @Test func aLoneTransactionGoesAtOnceAndLaterOnesWaitForItThenGoTogether() throws {
        var queue = Queue(limits: .init())
        let first = try Self.sent(queue.arrive("a", Self.put("k/a")))
        #expect(first.members == ["a"] && first.isQueued)
        #expect(queue.arrive("b", Self.put("k/b")) == nil)
        #expect(queue.arrive("c", Self.put("k/c")) == nil)
        #expect(queue.waitingCount == 2)
        let second = try Self.sent(queue.finished(first))
        #expect(second.members == ["b", "c"])
        #expect(Set(second.keys) == [Data("k/b".utf8), Data("k/c".utf8)])
        #expect(queue.finished(second) == nil)
        #expect(queue.queuedInFlight == 0)
        // Idle again: the next goes at once.
        #expect(queue.arrive("d", Self.put("k/d"))?.members == ["d"])
    }

    @Test func transactionsOnOneKeyNeverShareAGroupAndKeepTheirOrderOnIt() throws {
        var queue = Queue(limits: .init())
        let first = try Self.sent(queue.arrive("x", Self.put("k/x")))
        let both = GroupCommitFootprint(
            EtcdTransaction(
                compares: [.init(key: Data("k/1".utf8), .version(3))],
                success: [.put(key: Data("k/2".utf8), value: Data("2".utf8))]))
        #expect(queue.arrive("a", Self.put("k/1")) == nil)
        #expect(queue.arrive("b", both) == nil)  // compares k/1, which a writes
        #expect(queue.arrive("c", Self.put("k/2")) == nil)  // after b on k/2: waits for b
        #expect(queue.arrive("d", Self.put("k/3")) == nil)
        let second = try Self.sent(queue.finished(first))
        #expect(second.members == ["a", "d"])
        let third = try Self.sent(queue.finished(second))
        #expect(third.members == ["b"])
        let afterThird = try Self.sent(queue.finished(third))
        #expect(afterThird.members == ["c"])
    }

    @Test func aTransactionOnAKeyOnItsWayGoesAtOnceAloneWithoutTakingTheQueuesTurn() throws {
        var queue = Queue(limits: .init())
        let first = try Self.sent(queue.arrive("a", Self.put("k/hot")))
        let bypass = try Self.sent(queue.arrive("b", Self.put("k/hot")))
        #expect(bypass.members == ["b"] && !bypass.isQueued)
        #expect(queue.queuedInFlight == 1)
        #expect(queue.arrive("c", Self.put("k/other")) == nil)
        // b coming back frees no turn of the queue's: c still waits for a.
        #expect(queue.finished(bypass) == nil)
        // k/hot is still on its way with a: another writer of it goes at once too.
        let again = try Self.sent(queue.arrive("d", Self.put("k/hot")))
        #expect(!again.isQueued)
        let afterFirst = try Self.sent(queue.finished(first))
        #expect(afterFirst.members == ["c"])
        _ = queue.finished(again)
        // Nothing on k/hot is on its way any more: it queues like any other.
        #expect(queue.arrive("e", Self.put("k/hot")) == nil)
    }

    @Test func whatAGroupCannotHoldGoesAlone() throws {
        var queue = Queue(limits: .init())
        let first = try Self.sent(queue.arrive("x", Self.put("k/x")))
        let rangeDelete = GroupCommitFootprint(
            EtcdTransaction(success: [.delete(key: Data("k/r/".utf8), rangeEnd: Data("k/r0".utf8))]))
        #expect(!rangeDelete.isGroupable)
        #expect(queue.arrive("range", rangeDelete) == nil)
        #expect(queue.arrive("big", Self.put("k/big", bytes: GroupCommitFootprint.maxBytes + 1)) == nil)
        #expect(queue.arrive("small", Self.put("k/small")) == nil)
        let second = try Self.sent(queue.finished(first))
        #expect(second.members == ["range"])
        let third = try Self.sent(queue.finished(second))
        // Not groupable, so the small one after it waits for the next turn.
        #expect(third.members == ["big"])
        let afterThird = try Self.sent(queue.finished(third))
        #expect(afterThird.members == ["small"])

        let many = EtcdTransaction(
            success: (0...GroupCommitFootprint.maxOperations).map { .put(key: Data("k/\($0)".utf8), value: Data()) })
        #expect(!GroupCommitFootprint(many).isGroupable)
        let nested = EtcdTransaction(
            compares: [.init(key: Data("k/c".utf8), .version(1))],
            success: [.transaction(EtcdTransaction(compares: [.init(key: Data("k/n".utf8), .version(0))], success: []))])
        let footprint = GroupCommitFootprint(nested)
        #expect(footprint.isGroupable)
        #expect(footprint.keys == [Data("k/c".utf8), Data("k/n".utf8)])
    }

    @Test func aGroupStopsAtItsMembersAndBytes() throws {
        var limits = EtcdGroupCommit.Limits()
        limits.maxMembers = 3
        limits.maxBytes = 1_000
        var queue = Queue(limits: limits)
        let first = try Self.sent(queue.arrive("x", Self.put("k/x")))
        for name in ["a", "b", "c", "d"] { #expect(queue.arrive(name, Self.put("k/\(name)")) == nil) }
        let second = try Self.sent(queue.finished(first))
        #expect(second.members == ["a", "b", "c"])
        #expect(queue.arrive("e", Self.put("k/e", bytes: 600)) == nil)
        #expect(queue.arrive("f", Self.put("k/f", bytes: 600)) == nil)
        let third = try Self.sent(queue.finished(second))
        #expect(third.members == ["d", "e"])
        let afterThird = try Self.sent(queue.finished(third))
        #expect(afterThird.members == ["f"])
    }

    @Test(.enabled(if: EtcdCluster.isEnabled))
    func transactionsSentTogetherShareARevisionAndEachKeepsItsOutcome() async throws {
        try await withEtcd { _, etcd in
            let groups = EtcdGroupCommit(client: etcd)
            _ = try await etcd.transaction(EtcdTransaction(success: [.put(key: Data("g/range/a".utf8), value: Data("1".utf8))]))
            // Round 0 holds a transaction etcd refuses, so its group is sent again one by one,
            // and a range delete, which goes alone. Whether a later round forms a group depends
            // on timing; a few rounds make it all but certain.
            var sawAGroup = false
            for round in 0..<6 where !sawAGroup {
                enum Kind { case put(Int), create, refused, rangeDelete }
                var kinds: [Kind] = (0..<24).map(Kind.put) + Array(repeating: .create, count: 4)
                if round == 0 { kinds += [.refused, .rangeDelete] }
                let hot = Data("g/\(round)/created".utf8)
                let results = await withTaskGroup(of: (Int, Result<EtcdTransaction.Outcome, EtcdError>).self) { tasks in
                    for (index, kind) in kinds.enumerated() {
                        let transaction: EtcdTransaction
                        switch kind {
                        case .put(let n):
                            transaction = EtcdTransaction(success: [.put(key: Data("g/\(round)/\(n)".utf8), value: Data("\(n)".utf8))])
                        case .create:
                            transaction = EtcdTransaction(
                                compares: [.init(key: hot, .version(0))], success: [.put(key: hot, value: Data("\(index)".utf8))],
                                failure: [.range(key: hot)])
                        case .refused:
                            transaction = EtcdTransaction(success: [.put(key: Data(), value: Data("x".utf8))])
                        case .rangeDelete:
                            transaction = EtcdTransaction(
                                success: [.delete(key: Data("g/range/".utf8), rangeEnd: EtcdKeyRange.end(ofPrefix: Data("g/range/".utf8)))])
                        }
                        tasks.addTask {
                            do throws(EtcdError) {
                                return (index, .success(try await groups.run(transaction)))
                            } catch {
                                return (index, .failure(error))
                            }
                        }
                    }
                    var results: [Int: Result<EtcdTransaction.Outcome, EtcdError>] = [:]
                    for await (index, result) in tasks { results[index] = result }
                    return results
                }

                var putRevisions: [Int: Int64] = [:]
                var created = 0
                for (index, kind) in kinds.enumerated() {
                    let result = try #require(results[index])
                    switch kind {
                    case .put(let n):
                        let outcome = try result.get()
                        #expect(outcome.succeeded && outcome.results == [.put(previous: nil)])
                        putRevisions[n] = outcome.revision
                    case .create:
                        let outcome = try result.get()
                        if outcome.succeeded {
                            created += 1
                        } else {
                            guard case .range(let entries) = outcome.results.first else { throw TestFailure("\(outcome)") }
                            #expect(entries.first?.version == 1)
                        }
                    case .refused:
                        guard case .failure(.refused(_, let message)) = result else { throw TestFailure("\(result)") }
                        #expect(message.contains("key is not provided"))
                    case .rangeDelete:
                        guard case .delete(let deleted) = try result.get().results.first else { throw TestFailure("\(result)") }
                        #expect(deleted.map(\.key) == [Data("g/range/a".utf8)])
                    }
                }
                #expect(created == 1)

                // Each put's revision is the one etcd gave its key, shared or not.
                let read = try await etcd.range(
                    key: Data("g/\(round)/".utf8), rangeEnd: EtcdKeyRange.end(ofPrefix: Data("g/\(round)/".utf8)))
                for entry in read.entries {
                    let name = String(decoding: entry.key, as: UTF8.self).split(separator: "/").last.map(String.init) ?? ""
                    guard let n = Int(name) else { continue }
                    #expect(entry.modRevision == putRevisions[n])
                    #expect(entry.value == Data("\(n)".utf8))
                }
                #expect(read.entries.count == 25)
                if round > 0 { sawAGroup = Set(putRevisions.values).count < putRevisions.count }
            }
            #expect(sawAGroup, "24 puts sent at once never shared a revision in 5 rounds")
        }
    }
}
