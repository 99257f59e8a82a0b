import Foundation
import Testing

/// Feature processes under `MainEventLoop` (every example, through `FeatureHost.main`, and
/// `feature-bench`): the main actor runs on the thread that reads syncd's socket.
@Suite(.timeLimit(.minutes(3))) struct MainEventLoopTests {
    /// `feature-bench e2e`: a writer process puts 300 values, paced, from its main actor, and
    /// each is written to the socket by the thread that reads it (no other thread woken on the
    /// way out); the reducer in the other process sees every one, in order, each on the thread
    /// its connection reads from and sent by `.observe` from inside the read that brought it (no
    /// task resumed in between).
    @Test func everyChangeReachesTheReducerOnTheThreadThatReadIt() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        let bench = try await ChildProcess(
            try Binaries.path("feature-bench"),
            ["e2e", "--socket", scratch.socket, "--count", "300", "--rate", "1000", "--json"],
            scratch: scratch,
            name: "e2e"
        )
        #expect(try await bench.waitForExit(timeout: .seconds(90)) == 0, "\(bench.stderr)")
        let result = try #require(try JSONSerialization.jsonObject(with: Data(bench.stdout.utf8)) as? [String: Any], "\(bench.stdout)")
        #expect(result["on_reading_thread"] as? Int == 300)
        #expect(result["inside_the_read"] as? Int == 300)
        #expect(result["out_of_order"] as? Int == 0)
        #expect(result["written_by_reading_thread"] as? Int == 300)
        try await daemon.stop()
    }

    /// `MainEventLoop.clock` in a feature process (`feature-bench sleep`): every sleep of a
    /// main-actor task resumes on the main thread and never before its deadline, and a cancelled
    /// one ends at once with `CancellationError`.
    @Test func theLoopClockWakesTheMainThreadOnTimeAndEndsWhenCancelled() async throws {
        let scratch = try Scratch()
        let bench = try await ChildProcess(
            try Binaries.path("feature-bench"),
            ["sleep", "--count", "300", "--micros", "200", "--rounds", "1", "--json"],
            scratch: scratch,
            name: "sleep"
        )
        #expect(try await bench.waitForExit(timeout: .seconds(60)) == 0, "\(bench.stderr)")
        let result = try #require(try JSONSerialization.jsonObject(with: Data(bench.stdout.utf8)) as? [String: Any], "\(bench.stdout)")
        #expect(result["loop_sleeps"] as? Int == 300)
        #expect(result["loop_off_main_thread"] as? Int == 0)
        #expect(result["loop_early"] as? Int == 0)
        #expect(result["cancelled_promptly"] as? Bool == true)
    }

    /// `FeatureHost.main` exits 1 and says why when syncd cannot be reached, so that a service
    /// manager restarts it; it exits 0 on SIGTERM.
    @Test func aHostedFeatureExitsWithItsEnding() async throws {
        let scratch = try Scratch()
        var environment = ProcessInfo.processInfo.environment
        environment["SYNCD_SOCKET"] = nil
        let unreachable = try await ChildProcess(
            try Binaries.path("climate-thermostat"),
            ["--socket", scratch.file("nobody-listens.sock")],
            scratch: scratch,
            name: "unreachable",
            environment: environment
        )
        // FeatureHost waits up to 10 s for syncd before giving up.
        #expect(try await unreachable.waitForExit(timeout: .seconds(30)) == 1)
        #expect(unreachable.stderr.contains("Error: "), "\(unreachable.stderr)")
        #expect(unreachable.stderr.contains("nobody-listens.sock"), "\(unreachable.stderr)")

        let daemon = try await DaemonProcess(scratch)
        let thermostat = try await startFeature("climate-thermostat", [], scratch: scratch)
        try await waitForWatches(2, scratch: scratch)  // the target and the sensors
        thermostat.signal(SIGTERM)
        #expect(try await thermostat.waitForExit() == 0)
        try await daemon.stop()
    }
}
