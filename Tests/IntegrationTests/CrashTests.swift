import Foundation
import SyncClient
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Fault injection: syncd killed with SIGKILL in the middle of a write load.
@Suite(.timeLimit(.minutes(3))) struct CrashTests {
    @Test func sigkillUnderFourWritersLosesNoAcknowledgedWriteAndLeavesNoGap() async throws {
        let scratch = try Scratch()
        var daemon = try await DaemonProcess(scratch)
        let acknowledged = Collector<(key: String, value: Int, revision: UInt64)>()
        let watcher = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "watcher"))
        let seen = Collector<WatchBatch>()
        let socket = scratch.socket

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await batch in watcher.watch(prefixes: ["w/"], fromRevision: 0) where batch.kind == .changes { seen.add(batch) }
            }
            // Four writer processes' worth of connections, each writing its own keys until syncd dies.
            for writer in 0..<4 {
                group.addTask {
                    var configuration = SharedStateClient.Configuration(socketPath: socket, clientName: "writer-\(writer)")
                    configuration.reconnects = false
                    let client = try await SharedStateClient.connect(configuration)
                    var value = 0
                    while true {
                        value += 1
                        do {
                            let result = try await client.put("w/\(writer)", json: "\(value)")
                            acknowledged.add(("w/\(writer)", value, result.revision))
                        } catch {
                            return  // syncd is gone: this write may or may not have committed
                        }
                    }
                }
            }
            try await eventually("a few hundred acknowledged writes") { acknowledged.all.count >= 400 }
            daemon.child.signal(SIGKILL)
            _ = try await daemon.child.waitForExit()
            // Let the writers notice, then bring syncd back; the watcher reconnects and resumes.
            try await Task.sleep(for: .milliseconds(100))
            daemon = try await DaemonProcess(scratch)
            let status = try await syncctl(["--json", "status"], scratch: scratch)
            let finalRevision = try #require(
                (try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["revision"] as? Int
            )
            try await eventually("the watcher to reconnect and catch up") {
                watcher.connectionState == .connected && seen.all.last.map { Int($0.revision) } == finalRevision
            }
            group.cancelAll()
        }

        // Every acknowledged write is there: each key holds at least its last acknowledged value.
        let entries = try await watcher.list(prefix: "w/").entries
        for writer in 0..<4 {
            let key = "w/\(writer)"
            let lastAcknowledged = acknowledged.all.filter { $0.key == key }.map(\.value).max() ?? 0
            let stored = try #require(entries.first { $0.key == key }.flatMap { Int(String(decoding: $0.value, as: UTF8.self)) })
            #expect(stored >= lastAcknowledged, "\(key): stored \(stored), last acknowledged \(lastAcknowledged)")
        }
        // The revisions the watcher saw, across the crash and its reconnect: 1, 2, 3, … exactly once.
        let revisions = seen.all.map(\.revision)
        #expect(revisions == Array(1...UInt64(revisions.count)))
        // And each acknowledged write is the change the watcher saw at its revision.
        let byRevision = Dictionary(uniqueKeysWithValues: seen.all.map { ($0.revision, $0.changes) })
        for write in acknowledged.all {
            let change = byRevision[write.revision]?.first
            #expect(change?.key == write.key && change.map { String(decoding: $0.entry.value, as: UTF8.self) } == "\(write.value)")
        }
        await watcher.close()
        try await daemon.stop()
    }

    @Test func aGracefulStopAcknowledgesEveryWriteItCommits() async throws {
        let scratch = try Scratch()
        var daemon = try await DaemonProcess(scratch)
        var configuration = SharedStateClient.Configuration(socketPath: scratch.socket, clientName: "writer")
        configuration.reconnects = false
        let client = try await SharedStateClient.connect(configuration)
        let acknowledged = Collector<UInt64>()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<16 {
                group.addTask {
                    // Bounded, so that a syncd that does not stop cannot keep the test writing forever.
                    for index in 1...20_000 {
                        guard let result = try? await client.put("g/\(lane)/\(index)", json: "1") else { return }
                        acknowledged.add(result.revision)
                    }
                }
            }
            try await eventually("a few hundred acknowledged writes") { acknowledged.all.count >= 300 }
            try await daemon.stop()
            try await group.waitForAll()
        }
        let stopped = daemon.child.stderr
        daemon = try await DaemonProcess(scratch)
        let status = try await syncctl(["--json", "status"], scratch: scratch)
        // Every write that committed was acknowledged: the revisions are exactly the acknowledged ones.
        #expect(
            status.stdout.contains(#""revision":\#(acknowledged.all.count),"#),
            "acknowledged \(acknowledged.all.count): \(status.stdout) \(stopped.suffix(600))")
        #expect(acknowledged.all.sorted() == Array(1...UInt64(acknowledged.all.count)))
        try await daemon.stop()
    }
}
