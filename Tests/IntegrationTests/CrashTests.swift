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
                    // Until syncd dies, or the test gives up (a timeout cancels the group): never past it.
                    while !Task.isCancelled {
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

    @Test func aTornLastSegmentIsCutAtTheRestartAndNoAcknowledgedWriteIsLost() async throws {
        let scratch = try Scratch()
        var daemon = try await DaemonProcess(scratch)
        var configuration = SharedStateClient.Configuration(socketPath: scratch.socket, clientName: "writer")
        configuration.reconnects = false
        let client = try await SharedStateClient.connect(configuration)
        let acknowledged = Collector<(key: String, revision: UInt64)>()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<4 {
                group.addTask {
                    for index in 1...20_000 {
                        guard let result = try? await client.put("t/\(lane)/\(index)", json: "\(index)") else { return }
                        acknowledged.add(("t/\(lane)/\(index)", result.revision))
                    }
                }
            }
            try await eventually("a few hundred acknowledged writes") { acknowledged.all.count >= 300 }
            daemon.child.signal(SIGKILL)
            _ = try await daemon.child.waitForExit()
            try await group.waitForAll()
        }
        // What a crash in the middle of a commit group's write leaves: a record's header that
        // promises 4,096 bytes, and the first 100 of them.
        let journal = try #require(FileHandle(forWritingAtPath: scratch.database + "-segments"))
        let lastWhole = try journal.seekToEnd()
        var torn = Data()
        for field: UInt32 in [0x1234_5678, 4096] { withUnsafeBytes(of: field.littleEndian) { torn.append(contentsOf: $0) } }
        for field: UInt64 in [1_000_000, 1_000_000] { withUnsafeBytes(of: field.littleEndian) { torn.append(contentsOf: $0) } }
        torn.append(Data(repeating: 0x7B, count: 100))
        try journal.write(contentsOf: torn)
        try journal.close()

        daemon = try await DaemonProcess(scratch)
        #expect(daemon.child.stderr.contains("torn record"), "\(daemon.child.stderr.suffix(600))")
        let reader = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "reader"))
        let listed = try await reader.list(prefix: "t/")
        let keys = Set(listed.entries.map(\.key))
        let lost = acknowledged.all.filter { !keys.contains($0.key) }
        #expect(lost.isEmpty, "acknowledged but lost: \(lost.prefix(5))")
        #expect(listed.revision >= acknowledged.all.map(\.revision).max() ?? 0)
        #expect(listed.revision < 1_000_000)
        let cut = (try FileManager.default.attributesOfItem(atPath: scratch.database + "-segments")[.size] as? NSNumber)?.uint64Value
        #expect(cut.map { $0 <= lastWhole } == true)

        // The journal goes on from where it was cut: a write after the restart survives the next one.
        let after = try await reader.put("t/after", json: "1")
        await reader.close()
        daemon.child.signal(SIGKILL)
        _ = try await daemon.child.waitForExit()
        daemon = try await DaemonProcess(scratch)
        let checker = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "checker"))
        #expect(try await checker.get("t/after").modRevision == after.revision)
        await checker.close()
        await client.close()
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
