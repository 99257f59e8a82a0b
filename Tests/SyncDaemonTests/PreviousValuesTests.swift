import Foundation
import Logging
import SharedStateWire
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

/// A watch that asks for previous values gets each change with the key's entry before it (etcd's
/// `prev_kv`): live, from the table and from earlier revisions of the same commit; replayed, from
/// the change log, or marked compacted when the log no longer holds it.
@Suite struct PreviousValuesTests {
    private func put(_ key: String, _ json: String) -> WriteRequest {
        .put(key: key, value: Data(json.utf8), ifVersion: nil)
    }

    /// What a change says of the entry before it: its value, "absent" or "compacted".
    private func previous(_ change: Sharedstate_V1_Change) -> String {
        if change.previousCompacted { return "compacted" }
        return change.hasPrevious ? String(decoding: change.previous.value, as: UTF8.self) : "absent"
    }

    @Test func liveChangesCarryTheEntryBeforeThemEvenWithinOneCommit() async throws {
        let directory = try TemporaryDirectory()
        let storage = try Storage(path: directory.file("state.sqlite"), durability: .normal)
        defer { try? storage.close() }
        // No writer thread: this test commits on its own, several revisions in one group.
        let engine = try StateEngine(storage: storage, logger: Logger(label: "test"))
        _ = engine.commit([put("a", "1")], to: engine.backend as! SQLiteBackend)
        let withPrevious = CollectingSubscriber()
        let plain = CollectingSubscriber()
        try await engine.startWatch(id: 1, prefixes: [], start: .now, previousValues: true, subscriber: withPrevious)
        try await engine.startWatch(id: 1, prefixes: [], start: .now, subscriber: plain)

        _ = engine.commit(
            [put("a", "2"), put("a", "3"), .delete(key: "a", ifVersion: nil), put("b", "1"), put("a", "4")],
            to: engine.backend as! SQLiteBackend)

        let events = withPrevious.events
        #expect(events.map(\.revision) == [2, 3, 4, 5, 6])
        #expect(events.flatMap(\.changes).map(previous) == ["1", "2", "3", "absent", "absent"])
        #expect(events[0].changes[0].previous.modRevision == 1)
        // Those that did not ask get the shared frames, without previous entries.
        let others = plain.events.flatMap(\.changes)
        #expect(others.count == 5)
        #expect(others.allSatisfy { !$0.hasPrevious && !$0.previousCompacted })
    }

    @Test func aPrefixWatchGetsThePreviousEntriesOfTheChangesItSelects() async throws {
        try await withEngine { engine in
            _ = await engine.put("door/a", "1")
            let subscriber = CollectingSubscriber()
            try await engine.startWatch(id: 3, prefixes: ["door/"], start: .now, previousValues: true, subscriber: subscriber)
            _ = await engine.write(
                .transaction(
                    compares: [],
                    onSuccess: [
                        .put(key: "window/a", value: Data("9".utf8), ifVersion: nil),
                        .put(key: "door/a", value: Data("2".utf8), ifVersion: nil),
                    ], onFailure: []))
            let changes = subscriber.events.flatMap(\.changes)
            #expect(changes.map(\.entry.key) == ["door/a"])
            #expect(changes.map(previous) == ["1"])
        }
    }

    @Test func replayedChangesFindTheEntryBeforeThemInTheLogOrSayItWasCompacted() async throws {
        try await withEngine { engine in
            for (key, value) in [("a", "1"), ("b", "1"), ("a", "2"), ("b", "2"), ("c", "1"), ("a", "3")] {
                _ = await engine.put(key, value)
            }
            _ = await engine.write(.delete(key: "c", ifVersion: nil))
            #expect(try await engine.compact(through: 2) == 2)

            let subscriber = CollectingSubscriber()
            try await engine.startWatch(id: 1, prefixes: [], start: .after(3), previousValues: true, subscriber: subscriber)
            _ = await engine.put("b", "3")
            let events = subscriber.events.filter { $0.kind == .changes }
            #expect(subscriber.events.map(StateEngineTests.revisionAndKind) == ["4", "5", "6", "7", "7 progress", "8"])
            // b's entry before revision 4 is revision 2's, compacted; c was created at 5; a's
            // entry before 6 is revision 3's; c's before its deletion, revision 5's; live, b's is
            // revision 4's.
            #expect(events.flatMap(\.changes).map(previous) == ["compacted", "absent", "2", "1", "2"])
        }
    }
}
