import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite(.timeLimit(.minutes(2))) struct PresenceTests {
    @Test func aKilledProcessesEphemeralKeyDisappearsAndWatchersSeeTheDelete() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        let watch = try await startWatch(["presence/", "--count", "2"], scratch: scratch)
        try await waitForWatches(1, scratch: scratch)
        let holder = try await ChildProcess(
            try Binaries.path("syncctl"),
            ["--socket", scratch.socket, "put", "presence/kiosk-1", #""online""#, "--ephemeral", "--hold"],
            scratch: scratch,
            name: "holder"
        )
        try await eventually("the holder's put") { holder.stdout.contains("OK revision") }
        #expect(try await syncctl(["get", "presence/kiosk-1"], scratch: scratch).stdout == "\"online\"\n")

        holder.signal(SIGKILL)
        _ = try await holder.waitForExit()
        #expect(try await watch.waitForExit() == 0)
        let lines = try watchLines(watch.stdout)
        #expect(lines.map(\.type) == ["put", "delete"])
        #expect(lines.map(\.key) == ["presence/kiosk-1", "presence/kiosk-1"])
        #expect(lines[1].revision == lines[0].revision + 1)
        #expect(try await syncctl(["get", "presence/kiosk-1"], scratch: scratch).status == 2)
        try await daemon.stop()
    }

    @Test func ephemeralKeysOfADeadHolderDoNotOutliveARestartOfSyncd() async throws {
        let scratch = try Scratch()
        var daemon = try await DaemonProcess(scratch)
        let holder = try await ChildProcess(
            try Binaries.path("syncctl"),
            ["--socket", scratch.socket, "put", "presence/a", "1", "--ephemeral", "--hold"],
            scratch: scratch,
            name: "holder"
        )
        try await eventually("the holder's put") { holder.stdout.contains("OK revision") }
        daemon.child.signal(SIGKILL)
        holder.signal(SIGKILL)
        _ = try await daemon.child.waitForExit()
        _ = try await holder.waitForExit()
        daemon = try await DaemonProcess(scratch)
        #expect(try await syncctl(["get", "presence/a"], scratch: scratch).status == 2)
        // The deletion is an ordinary change, replayable from the log.
        let history = try await syncctl(["--json", "watch", "--from-revision", "0", "--count", "2"], scratch: scratch)
        #expect(try watchLines(history.stdout).map(\.type) == ["put", "delete"])
        try await daemon.stop()
    }

    /// A process that holds presence puts it back when syncd comes back, after syncd deleted it
    /// for the old session: a watcher in a third process sees the put, the delete, the put again.
    @Test(arguments: ["syncctl --hold", "climate-sensor"], [SIGKILL, SIGTERM])
    func presenceComesBackAfterSyncdRestarts(holderKind: String, signal: Int32) async throws {
        let scratch = try Scratch()
        var daemon = try await DaemonProcess(scratch)
        let key = holderKind == "climate-sensor" ? "climate/online/porch" : "presence/door-lock"
        let watch = try await startWatch([key, "--count", "3"], scratch: scratch)
        try await waitForWatches(1, scratch: scratch)
        let holder =
            holderKind == "climate-sensor"
            ? try await ChildProcess(
                try Binaries.path("climate-sensor"),
                ["--socket", scratch.socket, "--name", "porch", "--readings", "100000", "--interval-ms", "200"],
                scratch: scratch,
                name: "sensor"
            )
            : try await ChildProcess(
                try Binaries.path("syncctl"),
                ["--socket", scratch.socket, "put", key, "true", "--ephemeral", "--hold"],
                scratch: scratch,
                name: "holder"
            )
        try await eventually("the presence key") {
            watch.stdout.contains(#""type":"put""#)
        }

        daemon.child.signal(signal)
        _ = try await daemon.child.waitForExit()
        daemon = try await DaemonProcess(scratch)
        let restarted = ContinuousClock.now
        try await eventually(timeout: .seconds(10), "the presence key back") {
            (try? watchLines(watch.stdout).count) == 3
        }
        let back = ContinuousClock.now - restarted
        print("presence back \(back) after syncd was ready again (\(holderKind), signal \(signal))")
        #expect(try await watch.waitForExit() == 0)
        let lines = try watchLines(watch.stdout)
        #expect(lines.map(\.type) == ["put", "delete", "put"])
        #expect(lines.map(\.key) == [key, key, key])
        #expect(lines[0].revision < lines[1].revision && lines[1].revision < lines[2].revision)
        #expect(try await syncctl(["get", key], scratch: scratch).stdout == "true\n")

        holder.signal(SIGTERM)
        _ = try await holder.waitForExit()
        try await daemon.stop()
    }
}
