import Foundation
import SyncClient
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Every revision records its writer (session, client name, the kernel's pid/uid/gid) and the
/// cause its write carried; `history` and `watch` show them, across processes and restarts.
@Suite(.timeLimit(.minutes(2))) struct WhoChangedWhatTests {
    /// One line of `syncctl --json history` or `watch`, with its origin.
    private struct Line: Decodable {
        var revision: UInt64
        var type: String
        var session: UInt64?
        var client: String?
        var pid: Int32?
        var cause: String?
    }

    private func lines(_ output: String) throws -> [Line] {
        try output.split(separator: "\n").map { try JSONDecoder().decode(Line.self, from: Data($0.utf8)) }
    }

    @Test func historyAndWatchNameTheWriterAndItsCauseAcrossARestart() async throws {
        let scratch = try Scratch()
        var daemon = try await DaemonProcess(scratch)
        let watch = try await startWatch(["door/", "--count", "3"], scratch: scratch)
        try await waitForWatches(1, scratch: scratch)

        // A feature process (this test) and syncctl, each with a cause; then syncd itself, when
        // the feature's session ends and its presence key goes.
        let feature = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "door-lock"))
        try await feature.put("door/locked", value: Data("false".utf8), ephemeral: true, cause: "door-lock: requestApplied(r7)")
        // The watch names the writer's client, as history does, while it is connected to ask about.
        try await eventually("the watch naming door-lock") { watch.stdout.contains(#""client":"door-lock""#) }
        let put = try await syncctl(["put", "door/mode", #""auto""#, "--cause", "installer: first boot"], scratch: scratch)
        #expect(put.status == 0, "\(put.stderr)")
        await feature.close()
        _ = try await watch.waitForExit()

        let watched = try lines(watch.stdout)
        #expect(watched.map(\.revision) == [1, 2, 3])
        #expect(watched.map(\.cause) == ["door-lock: requestApplied(r7)", "installer: first boot", "session \(watched[0].session!) ended"])
        #expect(watched[2].session == 0)
        #expect(watched[0].session != watched[1].session)

        // syncd restarts: the writers are in the database, and new sessions get new numbers.
        try await daemon.stop()
        daemon = try await DaemonProcess(scratch)
        let history = try lines(try await syncctl(["--json", "history", "door/locked"], scratch: scratch).stdout)
        #expect(history.map(\.type) == ["put", "delete"])
        #expect(history[0].client == "door-lock")
        #expect(history[0].pid == getpid())
        #expect(history[0].cause == "door-lock: requestApplied(r7)")
        #expect(history[0].session == watched[0].session)
        #expect(history[1].client == "syncd")
        #expect(history[1].cause == "session \(watched[0].session!) ended")
        let mode = try lines(try await syncctl(["--json", "history", "door/mode"], scratch: scratch).stdout)
        #expect(mode.first?.client == "syncctl")
        #expect(mode.first?.cause == "installer: first boot")
        let again = try await syncctl(["--json", "put", "door/mode", #""manual""#], scratch: scratch)
        #expect(again.status == 0)
        let later = try lines(try await syncctl(["--json", "history", "door/mode"], scratch: scratch).stdout)
        #expect(try #require(later.last?.session) > watched[1].session!)
        try await daemon.stop()
    }

    @Test func diffsShowWhatChangedInsideTheValue() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        _ = try await syncctl(["put", "door/cfg", #"{"mode":"auto","list":[1,2]}"#], scratch: scratch)
        // A watch from now asks syncd for each change's previous value, and diffs against it.
        let watch = try await ChildProcess(
            try Binaries.path("syncctl"), ["--socket", scratch.socket, "watch", "door/", "--diff", "--count", "1"],
            scratch: scratch, name: "watch")
        try await waitForWatches(1, scratch: scratch)
        _ = try await syncctl(["put", "door/cfg", #"{"mode":"manual","list":[1]}"#], scratch: scratch)
        _ = try await watch.waitForExit()
        #expect(watch.stdout.contains("  − /list/1: 2\n  − /mode: \"auto\"\n  + /mode: \"manual\"\n"), "\(watch.stdout)")

        let history = try await syncctl(["--json", "history", "door/cfg", "--diff"], scratch: scratch)
        let patches = try history.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])["patch"] as? [[String: Any]]
        }
        #expect(patches.count == 2)
        #expect(patches[0]?.map { $0["op"] as? String } == ["add"])
        #expect(patches[1]?.map { "\($0["op"]!) \($0["path"]!)" } == ["remove /list/1", "replace /mode"])

        // A replay too: syncd finds the previous values in the change log.
        let replay = try await syncctl(["watch", "door/", "--diff", "--from-revision", "0", "--count", "2"], scratch: scratch)
        #expect(replay.status == 0, "\(replay.stderr)")
        let diffLines = replay.stdout.split(separator: "\n").filter { $0.hasPrefix("  ") }
        #expect(diffLines.first?.hasPrefix("  + (the whole value): {") == true, "\(replay.stdout)")
        #expect(diffLines.dropFirst() == ["  − /list/1: 2", "  − /mode: \"auto\"", "  + /mode: \"manual\""], "\(replay.stdout)")
        try await daemon.stop()
    }

    @Test func aCauseThatIsTooLongOrHasControlCharactersIsRefused() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        let long = try await syncctl(["put", "k", "1", "--cause", String(repeating: "x", count: 257)], scratch: scratch)
        #expect(long.status == 1)
        #expect(long.stderr.contains("the cause has 257 bytes; the limit is 256"))
        let control = try await syncctl(["put", "k", "1", "--cause", "a\u{7}b"], scratch: scratch)
        #expect(control.status == 1)
        #expect(control.stderr.contains("control character"))
        #expect(try await syncctl(["get", "k"], scratch: scratch).status == 2)
        try await daemon.stop()
    }
}
