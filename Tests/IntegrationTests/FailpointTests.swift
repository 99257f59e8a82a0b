import Foundation
import GRDB
import SyncClient
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// syncd killed at each named failpoint of its commit path (SYNCD_FAILPOINTS, debug builds), as
/// etcd's robustness tests do with gofail: every start afterwards succeeds on its own, and no
/// acknowledged write is lost or changed.
@Suite(.timeLimit(.minutes(5))) struct FailpointTests {
    /// Each failpoint, and the hit that kills: late enough that writes and moves went before.
    static let kills: [(point: String, hit: Int)] = [
        ("journal-before-append", 300), ("journal-after-append", 300), ("move-in-transaction", 2),
        ("move-after-commit", 2), ("journal-during-replace", 2),
    ]

    @Test(arguments: kills.map(\.point))
    func syncdKilledAtAFailpointStartsAgainWithEveryAcknowledgedWrite(point: String) async throws {
        let hit = Self.kills.first { $0.point == point }!.hit
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch, environment: ["SYNCD_FAILPOINTS": "\(point)=kill@\(hit)"])
        let acknowledged = LastValues()
        try await withThrowingTaskGroup(of: Void.self) { group in
            // Until syncd dies.
            try await group.addWriters(socket: scratch.socket, prefix: "f", connections: 2, lanes: 4) { put in
                acknowledged.values.withLock { $0[put.key] = put.value }
                return true
            }
            if point == "journal-during-replace" {
                // The journal is replaced at start-up (the first hit) and at a clean stop.
                try await Task.sleep(for: .seconds(1))
                daemon.child.signal(SIGTERM)
            }
            let status = try await daemon.child.waitForExit(timeout: .seconds(60))
            #expect(status != 0, "syncd did not die at \(point)")
            try await group.waitForAll()
        }
        let restarted = try await DaemonProcess(scratch)
        let reader = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "reader"))
        try await acknowledged.expectHeld(by: reader, prefix: "f/", context: point)
        #expect(!acknowledged.values.withLock({ $0 }).isEmpty)
        // The change log replays without a gap from the start.
        let revision = try await reader.status().revision
        #expect(
            try await replayedRevisions(reader, after: 0, through: revision) == Array(0..<revision).map { $0 + 1 },
            "\(point): the replay has gaps")
        await reader.close()
        try await restarted.stop()
    }
}

extension FailpointTests {
    /// Killed after compaction committed its mark, before it deleted any of the change log:
    /// the start afterwards serves every acknowledged write, replays without a gap from the
    /// compacted revision, and compacts again.
    @Test func syncdKilledDuringCompactionStartsAgainAndCompacts() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch, environment: ["SYNCD_FAILPOINTS": "compaction-before-delete=kill@1"])
        let acknowledged = LastValues()
        let compactedThrough = Mutex<UInt64>(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            try await group.addWriters(socket: scratch.socket, prefix: "c", connections: 2, lanes: 4) { put in
                acknowledged.values.withLock { $0[put.key] = put.value }
                return true
            }
            // Once the first writes are moved into the database, so that there are rows to delete.
            try await Task.sleep(for: .seconds(2))
            let client = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "compactor"))
            let target = try await client.status().revision / 2
            compactedThrough.withLock { $0 = target }
            await #expect(throws: (any Error).self) { _ = try await client.compact(through: target) }
            await client.close()
            #expect(try await daemon.child.waitForExit(timeout: .seconds(30)) != 0)
            try await group.waitForAll()
        }
        let target = compactedThrough.withLock { $0 }
        #expect(target > 0)
        let restarted = try await DaemonProcess(scratch)
        let reader = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "reader"))
        try await acknowledged.expectHeld(by: reader, prefix: "c/", context: "compaction")
        let revision = try await reader.status().revision
        #expect(
            try await replayedRevisions(reader, after: target, through: revision) == Array(target + 1...revision),
            "the replay after the compacted revision has gaps")
        // The mark survived: what it compacted is gone, and compaction goes on from there.
        await #expect(throws: SharedStateError.self) {
            for try await _ in reader.watch(prefixes: [""], fromRevision: target - 1) { break }
        }
        #expect(try await reader.compact(through: revision - 10) == revision - 10)
        await reader.close()
        try await restarted.stop()
    }

    /// A short-lived client's write costs the database nothing on its answer's path: its writer
    /// is journaled with the group, and the move inserts its `sessions` row. Killed inside that
    /// first move, syncd has no row for it in the database, yet after a restart history still
    /// names the writer (start-up inserts the rows of the journal's writers).
    @Test func aShortLivedWritersNameIsJournaledNotCommittedOnTheAnswersPath() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch, environment: ["SYNCD_FAILPOINTS": "move-in-transaction=kill@1"])
        let put = try await syncctl(["put", "door/locked", "true", "--cause", "locked at night"], scratch: scratch)
        #expect(put.status == 0, "\(put.stderr)")
        // The first move dies in its transaction, within a second.
        #expect(try await daemon.child.waitForExit(timeout: .seconds(30)) != 0)
        let sessions = try await DatabaseQueue(path: scratch.database).read {
            try String.fetchAll($0, sql: "SELECT client_name FROM sessions")
        }
        #expect(sessions == [], "a writer's row was committed before its first move")

        let restarted = try await DaemonProcess(scratch)
        let history = try await syncctl(["--json", "history", "door/locked"], scratch: scratch)
        #expect(history.stdout.contains(#""client":"syncctl""#), "\(history.stdout)")
        #expect(history.stdout.contains("locked at night"))
        try await restarted.stop()
        let moved = try await DatabaseQueue(path: scratch.database).read {
            try String.fetchAll($0, sql: "SELECT client_name FROM sessions")
        }
        #expect(moved == ["syncctl"])
    }
}

/// The last value acknowledged for each key, shared by a test's writers.
private final class LastValues: Sendable {
    let values = Mutex<[String: Int]>([:])

    /// Expects every key under `prefix` to hold its last acknowledged value or a later one.
    func expectHeld(by reader: SharedStateClient, prefix: String, context: String) async throws {
        let entries = Dictionary(uniqueKeysWithValues: try await reader.list(prefix: prefix).entries.map { ($0.key, $0) })
        for (key, value) in values.withLock({ $0 }) {
            let stored = entries[key].flatMap { Int(String(decoding: $0.value, as: UTF8.self)) }
            #expect(stored.map { $0 >= value } == true, "\(context): \(key) holds \(String(describing: stored)), \(value) was acknowledged")
        }
    }
}

/// The revisions the change log replays after `start` through `last`, in the order they come.
/// A watch that falls behind gets a resync folding what it missed: reading goes on from the last
/// revision seen with a new watch.
private func replayedRevisions(_ reader: SharedStateClient, after start: UInt64, through last: UInt64) async throws -> [UInt64] {
    var seen: [UInt64] = []
    var cursor = start
    replaying: while cursor < last {
        for try await batch in reader.watch(prefixes: [""], fromRevision: cursor) {
            if batch.kind == .resync { continue replaying }
            guard batch.kind == .changes else { continue }
            seen.append(batch.revision)
            cursor = batch.revision
            if batch.revision >= last { break replaying }
        }
        break
    }
    return seen
}
