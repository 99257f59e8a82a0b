import Foundation
import SyncClient
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite(.timeLimit(.minutes(2))) struct RestartTests {
    @Test func valuesSurviveAGracefulRestart() async throws {
        let scratch = try Scratch()
        var daemon = try await DaemonProcess(scratch)
        _ = try await syncctl(["put", "session/user", #""ada""#], scratch: scratch)
        _ = try await syncctl(["put", "session/user", #""grace""#], scratch: scratch)
        try await daemon.stop()
        #expect(daemon.child.stderr.contains("syncd stopped"))
        #expect(!FileManager.default.fileExists(atPath: scratch.socket))

        daemon = try await DaemonProcess(scratch)
        #expect(daemon.child.stderr.contains("revision=2"))
        let entry = try await syncctl(["--json", "get", "session/user"], scratch: scratch)
        #expect(entry.stdout == #"{"key":"session/user","value":"grace","version":2,"createRevision":1,"modRevision":2}"# + "\n")
        try await daemon.stop()
    }

    @Test func acknowledgedWritesSurviveSIGKILL() async throws {
        let scratch = try Scratch()
        var daemon = try await DaemonProcess(scratch)
        let client = try await SharedStateClient.connect(.init(socketPath: scratch.socket))
        for index in 1...100 { try await client.put("k/\(index % 7)", json: "\(index)") }
        daemon.child.signal(SIGKILL)
        _ = try await daemon.child.waitForExit()

        // The stale socket file is removed by the next syncd.
        #expect(FileManager.default.fileExists(atPath: scratch.socket))
        daemon = try await DaemonProcess(scratch)
        let status = try await syncctl(["--json", "status"], scratch: scratch)
        #expect(status.stdout.contains(#""revision":100,"#))
        let value = try await syncctl(["get", "k/2"], scratch: scratch)
        #expect(value.stdout == "100\n")
        try await daemon.stop()
    }

    @Test func aRunningWatchReconnectsAndResumesAfterARestart() async throws {
        let scratch = try Scratch()
        var daemon = try await DaemonProcess(scratch)
        let watch = try await startWatch(["--count", "3"], scratch: scratch)
        try await waitForWatches(1, scratch: scratch)
        _ = try await syncctl(["put", "a", "1"], scratch: scratch)
        try await eventually("the first change") { watch.stdout.contains(#""revision":1"#) }
        try await daemon.stop()
        // Written while the watcher was away: replayed from the change log on resume.
        daemon = try await DaemonProcess(scratch)
        _ = try await syncctl(["put", "b", "2"], scratch: scratch)
        _ = try await syncctl(["put", "c", "3"], scratch: scratch)
        #expect(try await watch.waitForExit() == 0)
        #expect(try watchLines(watch.stdout).map(\.key) == ["a", "b", "c"])
        try await daemon.stop()
    }

    @Test func aSecondDaemonOnTheSameDatabaseOrSocketIsRefused() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)

        let sameDatabase = try await ChildProcess(
            try Binaries.path("syncd"),
            ["--socket", scratch.file("other.sock"), "--database", scratch.database],
            scratch: scratch,
            name: "second"
        )
        #expect(try await sameDatabase.waitForExit() == 1)
        #expect(sameDatabase.stderr.contains("another syncd is using the database \(scratch.database)"))

        let sameSocket = try await ChildProcess(
            try Binaries.path("syncd"),
            ["--socket", scratch.socket, "--database", scratch.file("other/state.sqlite")],
            scratch: scratch,
            name: "third"
        )
        #expect(try await sameSocket.waitForExit() == 1)
        #expect(sameSocket.stderr.contains("another syncd is already listening on \(scratch.socket)"))

        // The first one still serves.
        #expect(try await syncctl(["put", "still", "true"], scratch: scratch).status == 0)
        try await daemon.stop()
    }

    @Test func anUnusableDatabasePathIsNamed() async throws {
        let scratch = try Scratch()
        let blocker = scratch.file("file")
        _ = FileManager.default.createFile(atPath: blocker, contents: Data("x".utf8))
        let child = try await ChildProcess(
            try Binaries.path("syncd"),
            ["--socket", scratch.socket, "--database", blocker + "/state.sqlite"],
            scratch: scratch,
            name: "syncd"
        )
        #expect(try await child.waitForExit() == 1)
        #expect(child.stderr.contains("syncd: "))
        #expect(child.stderr.contains(blocker))
    }
}
