import Foundation
import SyncClient
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The units in systemd/, checked with systemd's own tools, and syncd's side of the service
/// manager protocol, checked with a test-owned NOTIFY_SOCKET. None of it needs systemd as PID 1.
@Suite(.timeLimit(.minutes(2))) struct SystemdTests {
    private static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// The units, with ExecStart= pointing at the built syncd (verify needs the binary to exist).
    private func unitsForTest(in scratch: Scratch) throws -> (service: String, socket: String) {
        let service = try String(contentsOfFile: Self.repository + "/systemd/syncd.service", encoding: .utf8)
            .replacingOccurrences(of: "/usr/local/bin/syncd", with: try Binaries.path("syncd"))
        let socket = try String(contentsOfFile: Self.repository + "/systemd/syncd.socket", encoding: .utf8)
        try service.write(toFile: scratch.file("syncd.service"), atomically: true, encoding: .utf8)
        try socket.write(toFile: scratch.file("syncd.socket"), atomically: true, encoding: .utf8)
        return (scratch.file("syncd.service"), scratch.file("syncd.socket"))
    }

    private func run(_ tool: String, _ arguments: [String], scratch: Scratch) async throws -> SyncctlResult {
        let child = try await ChildProcess(tool, arguments, scratch: scratch, name: URL(fileURLWithPath: tool).lastPathComponent)
        let status = try await child.waitForExit(timeout: .seconds(60))
        return SyncctlResult(status: status, stdout: child.stdout, stderr: child.stderr)
    }

    @Test func unitsPassSystemdAnalyzeVerify() async throws {
        let scratch = try Scratch()
        let units = try unitsForTest(in: scratch)
        let result = try await run("/usr/bin/systemd-analyze", ["verify", "--man=no", units.socket, units.service], scratch: scratch)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        // Warnings are printed but do not fail verify; the units must not have any either.
        let complaints = result.stderr.split(separator: "\n").filter { $0.contains("syncd.") }
        #expect(complaints.isEmpty, "\(complaints)")
    }

    @Test func serviceIsRatedSafeBySystemdAnalyzeSecurity() async throws {
        let scratch = try Scratch()
        let units = try unitsForTest(in: scratch)
        let result = try await run(
            "/usr/bin/systemd-analyze", ["security", "--offline=yes", "--no-pager", units.service], scratch: scratch)
        let line = try #require(result.stdout.split(separator: "\n").first { $0.contains("Overall exposure level") })
        let score = try #require(line.split(separator: ":").last?.split(separator: " ").first.flatMap { Double($0) })
        #expect(score <= 1.0, "\(line)")
    }

    @Test func socketActivatedSyncdServesAClientThatConnectedBeforeItStarted() async throws {
        let scratch = try Scratch()
        let activator = try await ChildProcess(
            "/usr/bin/systemd-socket-activate",
            ["-l", scratch.socket, try Binaries.path("syncd"), "--database", scratch.database],
            scratch: scratch,
            name: "activator"
        )
        try await eventually("the activator to listen") { FileManager.default.fileExists(atPath: scratch.socket) }
        // syncd starts on this first connection; the client waits in the socket's backlog.
        let client = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "early"))
        try await client.put("activated", json: "true")
        #expect(try await client.get("activated").value == Data("true".utf8))
        #expect(activator.stderr.contains("syncd ready"))
        #expect(activator.stderr.contains("socket=\(scratch.socket)"))
        activator.signal(SIGTERM)
        _ = try await activator.waitForExit()
    }

    @Test func notifiesReadyStatusWatchdogReloadAndStopping() async throws {
        let scratch = try Scratch()
        let notify = try NotifyListener(path: scratch.file("notify.sock"))
        try #"{"logLevel":"info"}"#.write(toFile: scratch.file("syncd.json"), atomically: true, encoding: .utf8)
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = notify.path
        environment["WATCHDOG_USEC"] = "400000"
        let spawnedAt = ContinuousClock.now
        let child = try await ChildProcess(
            try Binaries.path("syncd"),
            ["--socket", scratch.socket, "--database", scratch.database, "--config", scratch.file("syncd.json")],
            scratch: scratch,
            name: "syncd",
            environment: environment
        )

        let ready = try await notify.waitFor("READY=1")
        // READY=1 is sent once the socket accepts connections.
        let client = try await SharedStateClient.connect(.init(socketPath: scratch.socket))
        try await client.put("a", json: "1")
        #expect(notify.messages[ready].text.contains("STATUS="))

        // Pings every WATCHDOG_USEC / 2 = 200 ms, and STATUS= kept current.
        let firstPing = try await notify.waitFor("WATCHDOG=1")
        try await notify.waitFor("WATCHDOG=1", after: try await notify.waitFor("WATCHDOG=1", after: firstPing + 1) + 1)
        try await notify.waitFor("STATUS=revision 1, 1 clients")

        // SIGHUP: RELOADING=1 with MONOTONIC_USEC, the file re-read, then READY=1 again.
        try #"{"logLevel":"debug"}"#.write(toFile: scratch.file("syncd.json"), atomically: true, encoding: .utf8)
        let before = notify.messages.count
        child.signal(SIGHUP)
        let reloading = try await notify.waitFor("RELOADING=1", after: before)
        #expect(notify.messages[reloading].text.contains("MONOTONIC_USEC="))
        try await notify.waitFor("READY=1", after: reloading)
        try await eventually("the reload to be logged") { child.stderr.contains("configuration reloaded") }
        // The new level is in force without a restart, and the connection survived.
        _ = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "after-reload"))
        try await eventually("a debug line") { child.stderr.contains("client greeted") }
        try await client.put("b", json: "2")

        // A broken file is refused with its problem named; the previous configuration stays.
        try #"{"logLevel":"loud"}"#.write(toFile: scratch.file("syncd.json"), atomically: true, encoding: .utf8)
        child.signal(SIGHUP)
        try await eventually("the refusal") { child.stderr.contains("logLevel \"loud\" is not one of") }
        try await client.put("c", json: "3")

        child.signal(SIGTERM)
        try await notify.waitFor("STOPPING=1")
        #expect(try await child.waitForExit() == 0)
        // Arrival times are only known when the test reads them, so count instead: no more pings
        // than 200 ms intervals since the process was spawned (plus the first, right at start).
        let pings = notify.messages.filter { $0.text == "WATCHDOG=1" }.count
        let intervals = (ContinuousClock.now - spawnedAt) / .milliseconds(200)
        #expect(pings >= 3 && Double(pings) <= intervals + 2, "\(pings) pings in \(intervals) intervals")
        // Closed cleanly: everything checkpointed into the database file, the write-ahead log empty.
        let walSize = (try? FileManager.default.attributesOfItem(atPath: scratch.database + "-wal")[.size] as? Int) ?? 0
        #expect(walSize == 0)
    }

    @Test func notifiesAnAbstractNamespaceSocketToo() async throws {
        let scratch = try Scratch()
        let notify = try NotifyListener(path: "@syncd-test-\(UUID().uuidString.prefix(8))")
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = notify.path
        let child = try await ChildProcess(
            try Binaries.path("syncd"),
            ["--socket", scratch.socket, "--database", scratch.database],
            scratch: scratch,
            name: "syncd",
            environment: environment
        )
        try await notify.waitFor("READY=1")
        child.signal(SIGTERM)
        try await notify.waitFor("STOPPING=1")
        #expect(try await child.waitForExit() == 0)
    }

    @Test func logsInJournalFormatWhenStandardErrorIsTheJournal() async throws {
        let scratch = try Scratch()
        // systemd sets JOURNAL_STREAM to the device and inode of the stream it connected; the
        // test's stand-in for the journal is the file that receives syncd's standard error.
        let child = try await ChildProcess(
            try Binaries.path("syncd"),
            ["--socket", scratch.socket, "--database", scratch.database],
            scratch: scratch,
            name: "syncd",
            environment: nil,
            journalStream: true
        )
        try await eventually("the ready line") { child.stderr.contains("syncd ready") }
        #expect(child.stderr.hasPrefix("<"))
        #expect(child.stderr.contains("<5>syncd ready"))
        #expect(!child.stderr.contains("\u{1B}["))
        child.signal(SIGTERM)
        #expect(try await child.waitForExit() == 0)
    }
}
