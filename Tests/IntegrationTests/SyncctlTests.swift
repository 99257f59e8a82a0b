import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite(.timeLimit(.minutes(2))) struct SyncctlTests {
    @Test func commandsPrintTheDocumentedShapes() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)

        let put = try await syncctl(["--json", "put", "counter/value", "41"], scratch: scratch)
        #expect(put.status == 0)
        #expect(put.stdout == #"{"revision":1,"version":1}"# + "\n")

        let piped = try await syncctl(["put", "doc/a", "-", "--json"], scratch: scratch, stdin: "{\"a\": [1, 2]}\n")
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(piped.stdout == #"{"revision":2,"version":1}"# + "\n")

        let plain = try await syncctl(["get", "doc/a"], scratch: scratch)
        #expect(plain.stdout == "{\"a\": [1, 2]}\n")

        let entry = try await syncctl(["--json", "get", "counter/value"], scratch: scratch)
        // On SQLite a consistent read is the same read.
        #expect(try await syncctl(["--json", "get", "--consistent", "counter/value"], scratch: scratch).stdout == entry.stdout)
        #expect(entry.stdout == #"{"key":"counter/value","value":41,"version":1,"createRevision":1,"modRevision":1}"# + "\n")

        let list = try await syncctl(["--json", "list"], scratch: scratch)
        #expect(
            list.stdout
                == #"[{"key":"counter/value","value":41,"version":1,"createRevision":1,"modRevision":1},{"key":"doc/a","value":{"a":[1,2]},"version":1,"createRevision":2,"modRevision":2}]"#
                + "\n"
        )
        let limited = try await syncctl(["--json", "list", "doc/", "--limit", "1"], scratch: scratch)
        #expect(limited.stdout.hasPrefix(#"[{"key":"doc/a""#))

        #expect(try await syncctl(["count"], scratch: scratch).stdout == "2\n")
        #expect(try await syncctl(["count", "doc/"], scratch: scratch).stdout == "1\n")
        #expect(try await syncctl(["--json", "count", "nothing/"], scratch: scratch).stdout == #"{"count":0,"revision":2}"# + "\n")

        let delete = try await syncctl(["--json", "delete", "doc/a"], scratch: scratch)
        #expect(delete.stdout == #"{"revision":3}"# + "\n")

        let status = try await syncctl(["--json", "status"], scratch: scratch)
        let object = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        #expect(object?["revision"] as? Int == 3)
        #expect(object?["keys"] as? Int == 1)
        #expect(object?["clients"] as? Int == 1)
        #expect(object?["watches"] as? Int == 0)
        #expect(object?["compactedRevision"] as? Int == 0)

        try await daemon.stop()
    }

    @Test func exitCodesTellScriptsWhatHappened() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        _ = try await syncctl(["put", "a", "1"], scratch: scratch)

        let cases: [(arguments: [String], status: Int32, message: String)] = [
            (["get", "missing"], 2, #"key "missing" not found"#),
            (["delete", "missing"], 2, "not found"),
            (["put", "a", "2", "--if-version", "5"], 3, "expected to be at version 5, but it is at version 1"),
            (["delete", "a", "--if-version", "9"], 3, "at version 1"),
            (["put", "a", "{not json"], 1, "invalid JSON value"),
            (["put", "a", ""], 1, "invalid JSON value"),
            (["put", "/bad", "1"], 1, "cannot start with '/'"),
            (["put", "a//b", "1"], 1, "cannot be empty"),
            (["get"], 1, "Missing expected argument"),
            (["frobnicate"], 1, "Unexpected argument"),
            (["list", "--limit", "0"], 1, "--limit must be at least 1"),
            (["count", "a//"], 1, "cannot be empty"),
        ]
        for (arguments, status, message) in cases {
            let result = try await syncctl(arguments, scratch: scratch)
            #expect(result.status == status, "syncctl \(arguments): \(result.stderr)")
            #expect(result.stderr.contains(message), "syncctl \(arguments): \(result.stderr)")
        }
        // None of the failures wrote anything.
        let value = try await syncctl(["--json", "get", "a"], scratch: scratch)
        #expect(value.stdout.contains(#""version":1,"#))
        try await daemon.stop()
    }

    /// `bench fanout` checks every delivery whichever way its subscribers read: SyncClient's watch,
    /// and the two floors under it (a NIO channel, read(2)) that say what the client adds.
    @Test(arguments: ["client", "nio", "read"])
    func benchFanoutDeliversEveryWriteToEverySubscriber(reader: String) async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        let bench = try await syncctl(
            ["--json", "bench", "fanout", "--reader", reader, "--subscribers", "2", "--count", "300", "--pipeline", "4"],
            scratch: scratch, timeout: .seconds(60))
        #expect(bench.status == 0, "\(bench.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(bench.stdout.utf8)) as? [String: Any]
        #expect((report?["delivered_per_sec"] as? Int ?? 0) > 0, "\(bench.stdout)")
        #expect((report?["subscriber_cpu_us"] as? Int ?? 0) > 0, "\(bench.stdout)")
        try await daemon.stop()
    }

    /// `bench put` makes every put whichever way it writes: through SyncClient, and the two floors
    /// under it (a NIO channel, write(2)); each put lands, so the last key holds the value.
    @Test(arguments: ["client", "nio", "write"])
    func benchPutMakesEveryPut(writer: String) async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        let bench = try await syncctl(
            ["--json", "bench", "put", "--writer", writer, "--connections", "2", "--pipeline", "4", "--count", "300", "--keys", "10"],
            scratch: scratch, timeout: .seconds(60))
        #expect(bench.status == 0, "\(bench.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(bench.stdout.utf8)) as? [String: Any]
        #expect((report?["ops_per_sec"] as? Int ?? 0) > 0, "\(bench.stdout)")
        let status = try await syncctl(["--json", "status"], scratch: scratch)
        #expect(status.stdout.contains(#""revision":300"#), "\(status.stdout)")
        try await daemon.stop()
    }

    @Test func compactRemovesHistoryButNotValues() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        for value in 1...5 { _ = try await syncctl(["put", "k", "\(value)"], scratch: scratch) }
        let compact = try await syncctl(["--json", "compact", "--keep", "2"], scratch: scratch)
        #expect(compact.stdout == #"{"compactedRevision":3}"# + "\n")
        let tooOld = try await syncctl(["watch", "--from-revision", "1", "--count", "1"], scratch: scratch)
        #expect(tooOld.status == 1)
        #expect(tooOld.stderr.contains("revision 1 is compacted"))
        let recent = try await syncctl(["--json", "watch", "--from-revision", "3", "--count", "2"], scratch: scratch)
        #expect(try watchLines(recent.stdout).map(\.revision) == [4, 5])
        #expect(try await syncctl(["get", "k"], scratch: scratch).stdout == "5\n")
        #expect(try await syncctl(["compact"], scratch: scratch).status == 1)
        #expect(try await syncctl(["compact", "--revision", "99"], scratch: scratch).stderr.contains("the current revision is 5"))
        try await daemon.stop()
    }

    @Test func historyAndClientsReportWhatHappenedAndWhoIsThere() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        _ = try await syncctl(["put", "a", "1"], scratch: scratch)
        _ = try await syncctl(["put", "b", "1"], scratch: scratch)
        _ = try await syncctl(["put", "a", "2"], scratch: scratch)
        _ = try await syncctl(["delete", "a"], scratch: scratch)
        let history = try await syncctl(["--json", "history", "a"], scratch: scratch)
        #expect(try watchLines(history.stdout).map(\.revision) == [1, 3, 4])
        #expect(try watchLines(history.stdout).map(\.type) == ["put", "put", "delete"])
        let recent = try await syncctl(["--json", "history", "a", "--limit", "1"], scratch: scratch)
        #expect(try watchLines(recent.stdout).map(\.revision) == [4])
        #expect(try await syncctl(["history", "never"], scratch: scratch).status == 2)

        let watch = try await startWatch([], scratch: scratch)
        try await waitForWatches(1, scratch: scratch)
        let clients = try await syncctl(["--json", "clients"], scratch: scratch)
        let list = try #require(try JSONSerialization.jsonObject(with: Data(clients.stdout.utf8)) as? [[String: Any]])
        #expect(list.count == 2)
        let watcher = try #require(list.first { $0["watches"] as? Int == 1 })
        #expect(watcher["pid"] as? Int == Int(watch.pid))
        #expect(watcher["uid"] as? Int == Int(getuid()))
        #expect(watcher["name"] as? String == "syncctl")
        try await daemon.stop()
    }

    @Test func backupAndRestoreRoundTripAsOneRevisionWatchersSee() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        _ = try await syncctl(["put", "a", "1"], scratch: scratch)
        _ = try await syncctl(["put", "b", #"{"x":2}"#], scratch: scratch)
        let backup = try await syncctl(["--json", "backup", scratch.file("backup.sqlite")], scratch: scratch)
        #expect(backup.status == 0, "\(backup.stderr)")
        #expect(backup.stdout.hasPrefix(#"{"revision":2,"#))
        _ = try await syncctl(["put", "a", "5"], scratch: scratch)
        _ = try await syncctl(["put", "c", "3"], scratch: scratch)
        _ = try await syncctl(["delete", "b"], scratch: scratch)

        let watch = try await startWatch(["--count", "3"], scratch: scratch)
        try await waitForWatches(1, scratch: scratch)
        let restore = try await syncctl(["--json", "restore", scratch.file("backup.sqlite")], scratch: scratch)
        #expect(restore.stdout == #"{"revision":6,"puts":2,"deletes":1}"# + "\n")
        #expect(try await watch.waitForExit() == 0)
        let lines = try watchLines(watch.stdout)
        #expect(lines.allSatisfy { $0.revision == 6 })
        #expect(lines.map(\.key).sorted() == ["a", "b", "c"])
        let list = try await syncctl(["list"], scratch: scratch)
        #expect(list.stdout == "a\t1\nb\t{\"x\":2}\n")

        // Not a backup: refused, nothing changes, no temporary file left behind.
        try "garbage".write(toFile: scratch.file("bad"), atomically: true, encoding: .utf8)
        let bad = try await syncctl(["restore", scratch.file("bad")], scratch: scratch)
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("not a usable syncd backup"))
        #expect(try await syncctl(["list"], scratch: scratch).stdout == list.stdout)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: scratch.path + "/db").filter { $0.contains("transfer") }
        #expect(leftovers.isEmpty)
        try await daemon.stop()
    }

    @Test func unreachableDaemonExitsFourAndSaysHowToStartIt() async throws {
        let scratch = try Scratch()
        let result = try await syncctl(["get", "a"], scratch: scratch)
        #expect(result.status == 4)
        #expect(result.stderr.contains(scratch.socket))
        #expect(result.stderr.contains("Start it with `syncd`"))
    }

    @Test func globalOptionsWorkAfterTheCommandToo() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        let child = try await ChildProcess(
            try Binaries.path("syncctl"),
            ["put", "k", "true", "--socket", scratch.socket, "--json"],
            scratch: scratch,
            name: "syncctl"
        )
        #expect(try await child.waitForExit() == 0)
        #expect(child.stdout == #"{"revision":1,"version":1}"# + "\n")
        try await daemon.stop()
    }
}
