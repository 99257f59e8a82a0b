import Foundation
import SharedStateWire
import Synchronization
import Testing

@testable import SyncEngine
@testable import SyncServer

/// The entries a commit group leaves (``GroupEntries``), the planning that reads them, and the
/// answers of a group handed to each connection.
@Suite struct GroupEntriesTests {
    private func stored(_ key: String, _ value: String) -> StoredEntry {
        StoredEntry.make(Entry(key: key, value: Data(value.utf8), version: 1, createRevision: 1, modRevision: 1))
    }

    private func lookUp(_ entries: GroupEntries, _ key: String) -> StoredEntry?? {
        var bytes = key
        return bytes.withUTF8 { entries.entry($0, hash: KeyIndex.hash(of: $0)) }
    }

    @Test func findsEachKeysLastEntryBeforeAndAfterItOutgrowsASearch() {
        var generator = SystemRandomNumberGenerator()
        // 3 keys stay under the searched few; 200 pass it and make the table grow several times.
        for keyCount in [3, 200] {
            var entries = GroupEntries()
            var model: [String: String?] = [:]
            var firstWritten: [String] = []
            for step in 0..<(keyCount * 4) {
                let key = "k/\(Int.random(in: 0..<keyCount, using: &generator))"
                let value: String? = step % 5 == 4 ? nil : "\(step)"
                entries.set(key, hash: KeyIndex.hash(of: key), to: value.map { stored(key, $0) })
                if model[key] == nil { firstWritten.append(key) }
                model[key] = .some(value)
            }
            for index in 0..<keyCount {
                let key = "k/\(index)"
                let found = lookUp(entries, key)
                switch model[key] {
                case .none: #expect(found == nil, "\(key) was never written")
                case .some(.none): #expect(found.map { $0 == nil } == true, "\(key) was deleted last")
                case .some(.some(let value)): #expect(found??.entry().value == Data(value.utf8), "\(key)")
                }
            }
            #expect(lookUp(entries, "absent") == nil)
            #expect(entries.written.map(\.key) == firstWritten)
        }
    }

    @Test func aGroupOfManyWritesToManyKeysIsPlannedAgainstItsOwnEarlierWrites() async throws {
        try await withEngine { engine in
            // 400 writes over 50 keys, queued together: the writer plans them in one group or a
            // few, each against the earlier ones.
            var requests: [WriteRequest] = []
            var versions: [String: UInt64] = [:]
            var expected: [Bool] = []
            for step in 0..<400 {
                let key = "g/\(step * 7 % 50)"
                let current = versions[key]
                switch step % 6 {
                case 5 where current != nil:
                    requests.append(.delete(key: key, ifVersion: nil))
                    versions[key] = nil
                    expected.append(true)
                case 4:
                    // Conditional on a version the key never has at this point: refused.
                    requests.append(.put(key: key, value: Data("\(step)".utf8), ifVersion: (current ?? 0) + 3))
                    expected.append(false)
                default:
                    requests.append(.put(key: key, value: Data("\(step)".utf8), ifVersion: current))
                    versions[key] = (current ?? 0) + 1
                    expected.append(true)
                }
            }
            let results = Mutex([Int: Result<WriteOutcome, SharedStateError>]())
            let pending = requests.enumerated().map { index, request in
                PendingWrite(request: request, origin: .syncd(""), reply: .callback { result in results.withLock { $0[index] = result } })
            }
            engine.submit(pending)
            let deadline = ContinuousClock.now + .seconds(20)
            while results.withLock({ $0.count }) < requests.count, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            let answered = results.withLock { $0 }
            #expect(answered.count == requests.count)
            for index in requests.indices {
                let succeeded = (try? answered[index]?.get()) != nil
                #expect(succeeded == expected[index], "write \(index): \(String(describing: answered[index]))")
            }
            for index in 0..<50 {
                let key = "g/\(index)"
                #expect(engine.entry(key).entry?.version == versions[key], "\(key)")
            }
        }
    }

    @Test func aGroupsAnswersReachEachOfManyTargetsOnceAndInOrder() {
        final class Answers: AnswerCollector {
            let received = Mutex<[[UInt64]]>([])
            func receive(_ answers: [WriteAnswer]) {
                received.withLock { $0.append(answers.map(\.requestID)) }
            }
        }
        // 40 connections, more than are searched for, their writes interleaved in runs, with
        // callbacks among them.
        let targets = (0..<40).map { _ in Answers() }
        let calledBack = Mutex<[UInt64]>([])
        var writes: [PendingWrite] = []
        var expected = Array(repeating: [UInt64](), count: targets.count)
        for id in UInt64(1)...600 {
            let put = WriteRequest.put(key: "a", value: Data("1".utf8), ifVersion: nil)
            if id % 13 == 0 {
                let reply = PendingWrite.Reply.callback { _ in calledBack.withLock { $0.append(id) } }
                writes.append(PendingWrite(request: put, origin: .syncd(""), reply: reply))
                continue
            }
            let target = Int(id / 3 * 7 % 40)
            writes.append(PendingWrite(request: put, origin: .syncd(""), answering: id, to: targets[target]))
            expected[target].append(id)
        }
        let results = writes.indices.map { Result<WriteOutcome, SharedStateError>.success(.put(revision: UInt64($0 + 1), version: 1)) }
        var round = DeliveryRound()
        PendingWrite.answer(writes, with: results, in: &round)
        _ = ConnectionDelivery().deliver(round)
        for (target, ids) in zip(targets, expected) {
            #expect(target.received.withLock { $0 } == [ids])
        }
        #expect(calledBack.withLock { $0 } == (UInt64(1)...600).filter { $0 % 13 == 0 })
    }
}
