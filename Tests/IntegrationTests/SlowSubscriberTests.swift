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

    private func write(
        _ count: Int,
        from first: Int,
        padding: Int = 400,
        with client: SharedStateClient
    ) async throws -> Double {
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<8 {
                group.addTask {
                    for index in stride(from: first + lane, to: first + count, by: 8) {
                        let padding = String(repeating: "x", count: padding)
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

    /// What `syncctl list load/` holds: key → canonical JSON.
    private func listedState(_ client: SharedStateClient) async throws -> [String: String] {
        Dictionary(
            uniqueKeysWithValues: try await client.list(prefix: "load/").entries.map {
                ($0.key, try normalized(try JSONSerialization.jsonObject(with: $0.value, options: [.fragmentsAllowed])))
            }
        )
    }

    /// Writes 40,000 puts of about 1 KB and checks that process `pid` grew by less than 32 MB
    /// meanwhile: kept for a consumer without a bound, they would be about 40 MB.
    private func expectBoundedMemory(of pid: Int32, named name: String, whileLoadingWith writer: SharedStateClient) async throws {
        let before = try residentBytes(of: pid)
        var peak = before
        for round in 0..<4 {
            _ = try await write(10_000, from: round * 10_000, padding: 1_000, with: writer)
            peak = max(peak, try residentBytes(of: pid))
        }
        print("\(name) RSS: \(before >> 10) KB before, \(peak >> 10) KB at most during 40,000 puts of 1 KB")
        #expect(peak - before < 32 << 20, "\(name): RSS grew from \(before) to \(peak)")
    }

    @Test func aFrozenSubscriberSlowsNobodyStaysBoundedAndConvergesAfterwards() async throws {
        let scratch = try Scratch()
        try #"{"limits":{"maxOutboundQueueBytes":65536}}"#.write(toFile: scratch.file("syncd.json"), atomically: true, encoding: .utf8)
        let daemon = try await DaemonProcess(scratch, extraArguments: ["--config", scratch.file("syncd.json"), "--log-level", "debug"])
        let frozen = try await startWatch(["load/"], scratch: scratch)
        let healthy = try await startWatch(["load/"], scratch: scratch)
        try await waitForWatches(2, scratch: scratch)
        let writer = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "writer"))

        let rateBefore = try await write(2000, from: 0, with: writer)
        let memoryBefore = try residentBytes(of: daemon.child.pid)
        frozen.signal(SIGSTOP)
        let rateWhileFrozen = try await write(8000, from: 2000, with: writer)
        let memoryWhileFrozen = try residentBytes(of: daemon.child.pid)

        // Writers keep their pace (a ratio within this run, generous for a shared machine) and
        // syncd does not buffer the frozen subscriber's backlog (8,000 changes of ~420 B ≈ 3.4 MB).
        #expect(rateWhileFrozen > rateBefore * 0.4, "\(Int(rateBefore)) writes/s before, \(Int(rateWhileFrozen)) while frozen")
        #expect(memoryWhileFrozen - memoryBefore < 24 << 20, "RSS grew from \(memoryBefore) to \(memoryWhileFrozen)")

        let final = try await listedState(writer)
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

    /// A watcher that is alive but slow (its reader, one process, sleeps 2 ms a line) keeps reading its socket,
    /// so syncd sees no backlog: the client library must bound what waits for the consumer.
    @Test func aSlowButAliveWatcherStaysBoundedAndConverges() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        let script = """
            mkfifo "$0/fifo"
            "$1" --socket "$2" --json watch load/ > "$0/fifo" &
            echo $! > "$0/watch.pid"
            exec python3 -u -c '
            import sys, time
            with open(sys.argv[1], "a") as seen:
                for line in sys.stdin:
                    seen.write(line)
                    seen.flush()
                    time.sleep(0.002)
            ' "$0/seen" < "$0/fifo"
            """
        let reader = try await ChildProcess(
            "/bin/sh",
            ["-c", script, scratch.path, try Binaries.path("syncctl"), scratch.socket],
            scratch: scratch,
            name: "slow reader"
        )
        try await waitForWatches(1, scratch: scratch)
        let watchPID = try #require(
            Int32(try String(contentsOfFile: scratch.file("watch.pid"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        let writer = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "writer"))

        try await expectBoundedMemory(of: watchPID, named: "slow watcher", whileLoadingWith: writer)

        let final = try await listedState(writer)
        try await eventually(timeout: .seconds(90), "the slow watcher to converge") {
            let seen = (try? String(contentsOfFile: scratch.file("seen"), encoding: .utf8)) ?? ""
            return (try? state(from: seen)) == final
        }
        let seen = try String(contentsOfFile: scratch.file("seen"), encoding: .utf8)
        #expect(seen.filter { $0 == "\n" }.count < 40_000, "the backlog was folded, not kept")
        reader.signal(SIGTERM)
        kill(watchPID, SIGTERM)
        _ = try await reader.waitForExit()
        await writer.close()
        try await daemon.stop()
    }

    /// The same through the feature runtime: a reducer that blocks 2 ms at every batch of an
    /// `.observe(prefix:)` watch, in its own process.
    @Test func aSlowReducerStaysBoundedAndConverges() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        let consumer = try await ChildProcess(
            try Binaries.path("feature-bench"),
            ["slow-consumer", "--socket", scratch.socket, "--prefix", "load/", "--state-file", scratch.file("state.json")],
            scratch: scratch,
            name: "slow consumer"
        )
        try await waitForWatches(1, scratch: scratch)
        let writer = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "writer"))

        try await expectBoundedMemory(of: consumer.pid, named: "slow reducer", whileLoadingWith: writer)

        var final: [String: Int] = [:]
        for entry in try await writer.list(prefix: "load/").entries {
            let object = try #require(try JSONSerialization.jsonObject(with: entry.value) as? [String: Any])
            final[entry.key] = try #require(object["n"] as? Int)
        }
        try await eventually(timeout: .seconds(60), "the slow reducer to hold the final state") {
            guard let data = FileManager.default.contents(atPath: scratch.file("state.json")) else { return false }
            return (try? JSONSerialization.jsonObject(with: data) as? [String: Int]) == final
        }
        consumer.signal(SIGTERM)
        _ = try await consumer.waitForExit()
        await writer.close()
        try await daemon.stop()
    }
}
