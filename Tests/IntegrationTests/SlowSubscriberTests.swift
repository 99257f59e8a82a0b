import Foundation
import SyncClient
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Fault injection: a subscriber process frozen with SIGSTOP while writes keep coming.
@Suite(.timeLimit(.minutes(3))) struct SlowSubscriberTests {
    /// The resident memory of a process, in bytes.
    private func residentBytes(of pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        let kilobytes = try #require(Int(line.split(separator: " ").dropFirst().first ?? ""))
        return kilobytes * 1024
    }

    /// The state a watch's printed lines add up to: key → JSON value.
    private func state(from output: String) throws -> [String: String] {
        var state: [String: String] = [:]
        for line in output.split(separator: "\n") {
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(line.utf8), options: [.fragmentsAllowed]) as? [String: Any])
            let key = try #require(object["key"] as? String)
            if object["type"] as? String == "delete" {
                state[key] = nil
            } else {
                state[key] = try normalized(try #require(object["value"]))
            }
        }
        return state
    }

    /// A JSON value in one canonical spelling, so values read from different places compare.
    private func normalized(_ value: Any) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys]), as: UTF8.self)
    }

    private func write(_ count: Int, from first: Int, with client: SharedStateClient) async throws -> Double {
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<8 {
                group.addTask {
                    for index in stride(from: first + lane, to: first + count, by: 8) {
                        let padding = String(repeating: "x", count: 400)
                        try await client.put("load/\(index % 64)", json: #"{"n":\#(index),"pad":"\#(padding)"}"#)
                    }
                }
            }
            try await group.waitForAll()
        }
        let seconds =
            Double((ContinuousClock.now - started).components.attoseconds) / 1e18
            + Double((ContinuousClock.now - started).components.seconds)
        return Double(count) / seconds
    }

    @Test func aFrozenSubscriberSlowsNobodyStaysBoundedAndConvergesAfterwards() async throws {
        let scratch = try Scratch()
        try #"{"limits":{"maxOutboundQueueBytes":65536}}"#.write(toFile: scratch.file("syncd.json"), atomically: true, encoding: .utf8)
        let daemon = try await DaemonProcess(scratch, extraArguments: ["--config", scratch.file("syncd.json"), "--log-level", "debug"])
        let frozen = try startWatch(["load/"], scratch: scratch)
        let healthy = try startWatch(["load/"], scratch: scratch)
        try await waitForWatches(2, scratch: scratch)
        let writer = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "writer"))

        let rateBefore = try await write(2000, from: 0, with: writer)
        let memoryBefore = try residentBytes(of: daemon.child.process.processIdentifier)
        frozen.signal(SIGSTOP)
        let rateWhileFrozen = try await write(8000, from: 2000, with: writer)
        let memoryWhileFrozen = try residentBytes(of: daemon.child.process.processIdentifier)

        // Writers keep their pace (a ratio within this run, generous for a shared machine) and
        // syncd does not buffer the frozen subscriber's backlog (8,000 changes of ~420 B ≈ 3.4 MB).
        #expect(rateWhileFrozen > rateBefore * 0.4, "\(Int(rateBefore)) writes/s before, \(Int(rateWhileFrozen)) while frozen")
        #expect(memoryWhileFrozen - memoryBefore < 24 << 20, "RSS grew from \(memoryBefore) to \(memoryWhileFrozen)")

        let final = Dictionary(
            uniqueKeysWithValues: try await writer.list(prefix: "load/").entries.map {
                ($0.key, try normalized(try JSONSerialization.jsonObject(with: $0.value, options: [.fragmentsAllowed])))
            }
        )
        // The other subscriber saw every change, in order.
        try await eventually("the healthy watcher to see all 10,000 changes") { healthy.stdout.filter { $0 == "\n" }.count >= 10_000 }
        let healthyLines = try watchLines(healthy.stdout)
        #expect(healthyLines.map(\.revision) == Array(1...10_000))
        #expect(try state(from: healthy.stdout) == final)

        // Thawed, the frozen one converges to exactly the final state (it skipped intermediate values).
        frozen.signal(SIGCONT)
        try await eventually("the thawed watcher to converge") { (try? state(from: frozen.stdout)) == final }
        #expect(daemon.child.stderr.contains("resynchronised a subscriber that fell behind"))
        #expect(frozen.stdout.filter { $0 == "\n" }.count < 10_000, "the backlog was replaced, not kept")
        let status = try await syncctl(["--json", "status"], scratch: scratch)
        #expect(status.stdout.contains(#""revision":10000,"#))
        try await daemon.stop()
    }
}
