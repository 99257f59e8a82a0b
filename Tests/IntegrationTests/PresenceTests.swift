import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite(.timeLimit(.minutes(2))) struct PresenceTests {
    @Test func aKilledProcessesEphemeralKeyDisappearsAndWatchersSeeTheDelete() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        let watch = try startWatch(["presence/", "--count", "2"], scratch: scratch)
        try await waitForWatches(1, scratch: scratch)
        let holder = try ChildProcess(
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

    @Test func ephemeralKeysDoNotOutliveARestartOfSyncd() async throws {
        let scratch = try Scratch()
        var daemon = try await DaemonProcess(scratch)
        let holder = try ChildProcess(
            try Binaries.path("syncctl"),
            ["--socket", scratch.socket, "put", "presence/a", "1", "--ephemeral", "--hold"],
            scratch: scratch,
            name: "holder"
        )
        try await eventually("the holder's put") { holder.stdout.contains("OK revision") }
        daemon.child.signal(SIGKILL)
        _ = try await daemon.child.waitForExit()
        daemon = try await DaemonProcess(scratch)
        #expect(try await syncctl(["get", "presence/a"], scratch: scratch).status == 2)
        // The deletion is an ordinary change, replayable from the log.
        let history = try await syncctl(["--json", "watch", "--from-revision", "0", "--count", "2"], scratch: scratch)
        #expect(try watchLines(history.stdout).map(\.type) == ["put", "delete"])
        try await daemon.stop()
    }
}
