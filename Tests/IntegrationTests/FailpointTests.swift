import Foundation
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
        let entries = Dictionary(uniqueKeysWithValues: try await reader.list(prefix: "f/").entries.map { ($0.key, $0) })
        for (key, value) in acknowledged.values.withLock({ $0 }) {
            let stored = entries[key].flatMap { Int(String(decoding: $0.value, as: UTF8.self)) }
            #expect(stored.map { $0 >= value } == true, "\(point): \(key) holds \(String(describing: stored)), \(value) was acknowledged")
        }
        #expect(!acknowledged.values.withLock({ $0 }).isEmpty)
        // The change log replays without a gap from the start.
        let revision = try await reader.status().revision
        var seen: [UInt64] = []
        if revision > 0 {
            for try await batch in reader.watch(prefixes: [""], fromRevision: 0) where batch.kind == .changes {
                seen.append(batch.revision)
                if batch.revision >= revision { break }
            }
        }
        #expect(seen == Array(1...max(revision, 1)).prefix(Int(revision)).map { $0 }, "\(point): the replay has gaps")
        await reader.close()
        try await restarted.stop()
    }
}

/// The last value acknowledged for each key, shared by a test's writers.
private final class LastValues: Sendable {
    let values = Mutex<[String: Int]>([:])
}
