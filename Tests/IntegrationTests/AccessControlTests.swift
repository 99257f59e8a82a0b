import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The access policy with clients running as other users (`setpriv`): what they may read, write
/// and watch, and that nothing outside their grant leaks, not even key names.
@Suite(.timeLimit(.minutes(2))) struct AccessControlTests {
    private static let policy = """
        {
          "grants": [
            { "prefix": "public/", "groups": ["nogroup"], "read": true },
            { "prefix": "public/nobody/", "users": ["nobody"], "read": true, "write": true },
            { "prefix": "team/", "users": [1234], "read": true, "write": true }
          ]
        }
        """

    /// A copy of syncctl that other users can run, whatever the permissions of the build folder.
    private func publicSyncctl(_ scratch: Scratch) async throws -> String {
        let copy = scratch.file("syncctl")
        if !FileManager.default.fileExists(atPath: copy) {
            // Copied by install(1), never written by this process: a process that another test
            // spawns while this one holds the copy open for writing inherits that descriptor until
            // it execs (close-on-exec only closes it then), and executing the copy meanwhile fails
            // with "Text file busy" (ETXTBSY; setpriv exits 126). install spawns nothing.
            let install = try await ChildProcess(
                "/usr/bin/install", ["-m", "0755", try Binaries.path("syncctl"), copy], scratch: scratch, name: "install")
            let status = try await install.waitForExit()
            guard status == 0 else { throw TestFailure("cannot copy syncctl to \(copy): \(install.stderr)") }
        }
        return copy
    }

    /// Runs syncctl as `uid` (group nogroup, no other groups).
    /// `syncctl watch PREFIX` run as the user nobody (65534), in the background.
    private func watchAsNobody(_ prefix: String, scratch: Scratch, name: String) async throws -> ChildProcess {
        try await ChildProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=65534", "--regid=65534", "--clear-groups", try await publicSyncctl(scratch), "--socket", scratch.socket,
                "watch", prefix,
            ],
            scratch: scratch,
            name: name
        )
    }

    private func syncctl(as uid: Int, _ arguments: [String], scratch: Scratch) async throws -> SyncctlResult {
        let child = try await ChildProcess(
            "/usr/bin/setpriv",
            ["--reuid=\(uid)", "--regid=65534", "--clear-groups", try await publicSyncctl(scratch), "--socket", scratch.socket]
                + arguments,
            scratch: scratch,
            name: "syncctl-\(uid)"
        )
        let status = try await child.waitForExit()
        return SyncctlResult(status: status, stdout: child.stdout, stderr: child.stderr)
    }

    private func daemon(_ scratch: Scratch, policy: String?) async throws -> DaemonProcess {
        var arguments = ["--socket-group", "65534"]
        if let policy {
            try policy.write(toFile: scratch.file("policy.json"), atomically: true, encoding: .utf8)
            arguments += ["--policy", scratch.file("policy.json")]
        }
        chmod(scratch.path, 0o755)
        return try await DaemonProcess(scratch, extraArguments: arguments)
    }

    @Test func aUserOutsideTheSocketsGroupIsToldWhyAndWhatToDo() async throws {
        let scratch = try Scratch()
        chmod(scratch.path, 0o755)
        // No --socket-group: the socket stays root's group, which nobody is not in.
        let daemon = try await DaemonProcess(scratch)
        let refused = try await syncctl(as: 65534, ["get", "a"], scratch: scratch)
        #expect(refused.status == 4)
        #expect(refused.stderr.contains("cannot reach syncd at \(scratch.socket): permission denied: the socket is srw-rw----"))
        #expect(refused.stderr.contains("(owner root, group root), and this process (user nobody) is neither its owner nor in group root"))
        #expect(refused.stderr.contains("or start syncd with --socket-group naming a group the user is in"))
        #expect(!refused.stderr.contains("Is syncd running"), "syncd is running: \(refused.stderr)")
        try await daemon.stop()
    }

    @Test func statusShowsAUserOnlyTheKeysItMayReadAndNoPaths() async throws {
        let scratch = try Scratch()
        let daemon = try await daemon(scratch, policy: Self.policy)
        for (key, value) in [("public/a", "1"), ("public/b", "2"), ("team/secret", "3"), ("private/x", "4")] {
            _ = try await IntegrationTests.syncctl(["put", key, value], scratch: scratch)
        }
        // nobody may read public/ (its group's grant) and public/nobody/: two keys of four.
        let asNobody = try await syncctl(as: 65534, ["--json", "status"], scratch: scratch)
        #expect(asNobody.status == 0, "\(asNobody.stderr)")
        #expect(asNobody.stdout.contains(#""keys":2"#), "\(asNobody.stdout)")
        #expect(asNobody.stdout.contains(#""database":"""#), "\(asNobody.stdout)")
        let text = try await syncctl(as: 65534, ["status"], scratch: scratch)
        #expect(text.stdout.contains("(its path is shown to administrators)"), "\(text.stdout)")
        // A user granted nothing (uid and group 4321; the socket's group only as the kernel's
        // supplementary group, which the policy does not read) sees no key.
        let stranger = try await ChildProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=4321", "--regid=4321", "--groups=65534", try await publicSyncctl(scratch), "--socket", scratch.socket,
                "--json", "status",
            ],
            scratch: scratch, name: "syncctl-stranger")
        #expect(try await stranger.waitForExit() == 0, "\(stranger.stderr)")
        #expect(stranger.stdout.contains(#""keys":0"#), "\(stranger.stdout)")
        // An administrator sees everything, and where the database is.
        let asRoot = try await IntegrationTests.syncctl(["--json", "status"], scratch: scratch)
        #expect(asRoot.stdout.contains(#""keys":4"#), "\(asRoot.stdout)")
        #expect(!asRoot.stdout.contains(#""database":"""#), "\(asRoot.stdout)")
        try await daemon.stop()
    }

    @Test func theKernelsIDsOfAWriterAreShownToAdministratorsOnly() async throws {
        let scratch = try Scratch()
        let daemon = try await daemon(scratch, policy: Self.policy)
        _ = try await IntegrationTests.syncctl(["put", "public/a", "1", "--cause", "set up"], scratch: scratch)
        let asNobody = try await syncctl(as: 65534, ["--json", "history", "public/a"], scratch: scratch)
        #expect(asNobody.status == 0, "\(asNobody.stderr)")
        #expect(asNobody.stdout.contains(#""client":"syncctl""#))
        #expect(asNobody.stdout.contains(#""cause":"set up""#))
        #expect(!asNobody.stdout.contains(#""pid""#))
        let asRoot = try await IntegrationTests.syncctl(["--json", "history", "public/a"], scratch: scratch)
        #expect(asRoot.stdout.contains(#""pid""#))
        try await daemon.stop()
    }

    @Test func grantsAllowAndEverythingElseIsDeniedWithoutLeaks() async throws {
        let scratch = try Scratch()
        let daemon = try await daemon(scratch, policy: Self.policy)
        for (key, value) in [("public/a", "1"), ("team/secret", #""s3cr3t""#), ("team/other", "2")] {
            _ = try await IntegrationTests.syncctl(["put", key, value], scratch: scratch)
        }
        let nobody = 65534

        #expect(try await syncctl(as: nobody, ["put", "public/nobody/x", "1"], scratch: scratch).status == 0)
        #expect(try await syncctl(as: nobody, ["get", "public/a"], scratch: scratch).stdout == "1\n")

        let deniedWrite = try await syncctl(as: nobody, ["put", "public/b", "1"], scratch: scratch)
        #expect(deniedWrite.status == 5)
        #expect(deniedWrite.stderr.contains("permission denied: user 65534 may not write key \"public/b\""))
        let deniedRead = try await syncctl(as: nobody, ["get", "team/secret"], scratch: scratch)
        #expect(deniedRead.status == 5)
        #expect(!deniedRead.stderr.contains("s3cr3t"))
        #expect(try await syncctl(as: nobody, ["history", "team/secret"], scratch: scratch).status == 5)
        #expect(try await syncctl(as: nobody, ["compact", "--keep", "1"], scratch: scratch).status == 5)
        #expect(try await syncctl(as: nobody, ["clients"], scratch: scratch).status == 5)

        // A prefix with nothing readable under it is refused; one the grant lies under is filtered.
        let deniedList = try await syncctl(as: nobody, ["list", "team/"], scratch: scratch)
        #expect(deniedList.status == 5)
        #expect(deniedList.stderr.contains(#"may not read any key under "team/""#))
        #expect(!deniedList.stderr.contains("secret"))
        let deniedWatch = try await syncctl(as: nobody, ["watch", "public/", "team/", "--count", "1"], scratch: scratch)
        #expect(deniedWatch.status == 5)
        #expect(deniedWatch.stderr.contains(#"may not read any key under "team/""#))
        #expect(try await syncctl(as: nobody, ["list", "pub"], scratch: scratch).stdout == "public/a\t1\npublic/nobody/x\t1\n")

        // A list or a watch of everything shows only what the grant covers: no foreign key names.
        let list = try await syncctl(as: nobody, ["list"], scratch: scratch)
        #expect(list.stdout == "public/a\t1\npublic/nobody/x\t1\n")
        // A count likewise counts only what the grant covers, and is refused where it covers nothing.
        #expect(try await syncctl(as: nobody, ["count"], scratch: scratch).stdout == "2\n")
        #expect(try await IntegrationTests.syncctl(["count"], scratch: scratch).stdout == "4\n")
        #expect(try await syncctl(as: nobody, ["count", "team/"], scratch: scratch).status == 5)
        let watch = try await ChildProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=65534", "--regid=65534", "--clear-groups", try await publicSyncctl(scratch), "--socket", scratch.socket, "--json",
                "watch", "--snapshot", "--count", "1",
            ],
            scratch: scratch,
            name: "watch-nobody"
        )
        try await waitForWatches(1, scratch: scratch)
        _ = try await IntegrationTests.syncctl(["put", "team/secret", #""new""#], scratch: scratch)
        _ = try await IntegrationTests.syncctl(["put", "public/a", "2"], scratch: scratch)
        #expect(try await watch.waitForExit() == 0)
        #expect(!watch.stdout.contains("team/"))
        #expect(try watchLines(watch.stdout).map(\.key) == ["public/a", "public/nobody/x", "public/a"])

        // Another user, by number: its own prefix, and the group's read grant.
        #expect(try await syncctl(as: 1234, ["put", "team/mine", "1"], scratch: scratch).status == 0)
        #expect(try await syncctl(as: 1234, ["get", "public/a"], scratch: scratch).status == 0)
        #expect(try await syncctl(as: 1234, ["put", "public/nobody/x", "2"], scratch: scratch).status == 5)
        try await daemon.stop()
    }

    @Test func aNewPolicyEndsTheWatchesItLeavesNothingToRead() async throws {
        let scratch = try Scratch()
        let daemon = try await daemon(scratch, policy: Self.policy)
        _ = try await IntegrationTests.syncctl(["put", "public/a", "1"], scratch: scratch)
        let watch = try await watchAsNobody("public/", scratch: scratch, name: "watch-revoked")
        try await waitForWatches(1, scratch: scratch)
        // The grant on public/ goes: the watch ends with permission denied, not in silence.
        try #"{"grants":[{"prefix":"team/","users":[1234],"read":true}]}"#.write(
            toFile: scratch.file("policy.json"),
            atomically: true,
            encoding: .utf8
        )
        daemon.child.signal(SIGHUP)
        #expect(try await watch.waitForExit() == 5)
        #expect(watch.stderr.contains(#"permission denied: user 65534 may not read any key under "public/""#))
        try await waitForWatches(0, scratch: scratch)
        try await daemon.stop()
    }

    /// A reload that narrows a grant narrows the watches under it at once: the watch goes on,
    /// and is sent only what the new policy lets its user read, key names included.
    @Test func aNewPolicyNarrowsTheWatchesItStillLetsRead() async throws {
        let scratch = try Scratch()
        let daemon = try await daemon(scratch, policy: Self.policy)
        let watch = try await watchAsNobody("public/", scratch: scratch, name: "watch-narrowed")
        try await waitForWatches(1, scratch: scratch)
        _ = try await IntegrationTests.syncctl(["put", "public/before", "1"], scratch: scratch)
        try await eventually("the change before the reload") { watch.stdout.contains("public/before") }
        try #"{"grants":[{"prefix":"public/open/","users":["nobody"],"read":true}]}"#.write(
            toFile: scratch.file("policy.json"),
            atomically: true,
            encoding: .utf8
        )
        daemon.child.signal(SIGHUP)
        try await eventually("the reload") { daemon.child.stderr.contains("configuration reloaded") }
        _ = try await IntegrationTests.syncctl(["put", "public/secret", "2"], scratch: scratch)
        _ = try await IntegrationTests.syncctl(["put", "public/open/x", "3"], scratch: scratch)
        try await eventually("the change the new policy lets through") { watch.stdout.contains("public/open/x") }
        #expect(!watch.stdout.contains("public/secret"))
        try await waitForWatches(1, scratch: scratch)
        watch.signal(SIGTERM)
        _ = try await watch.waitForExit()
        try await daemon.stop()
    }

    @Test func withoutAPolicyOnlySyncdsUserAndRootMayDoAnything() async throws {
        let scratch = try Scratch()
        let daemon = try await daemon(scratch, policy: nil)
        _ = try await IntegrationTests.syncctl(["put", "a", "1"], scratch: scratch)
        #expect(try await syncctl(as: 65534, ["get", "a"], scratch: scratch).status == 5)
        // A list or watch that can never show anything is refused, not answered with silence.
        let list = try await syncctl(as: 65534, ["list"], scratch: scratch)
        #expect(list.status == 5)
        #expect(list.stdout == "")
        #expect(list.stderr.contains("permission denied: user 65534 may not read any key"))
        let watch = try await syncctl(as: 65534, ["watch", "--snapshot", "--count", "1"], scratch: scratch)
        #expect(watch.status == 5)
        #expect(watch.stderr.contains("permission denied"))
        try await daemon.stop()
    }

    @Test func aBrokenPolicyIsRefusedOnReloadNamingTheLineAndTheOldOneStays() async throws {
        let scratch = try Scratch()
        let daemon = try await daemon(scratch, policy: Self.policy)
        try """
        {
          "grants": [
            { "prefix": "public/", "users": ["no-such-user"], "read": true }
          ]
        }
        """.write(toFile: scratch.file("policy.json"), atomically: true, encoding: .utf8)
        daemon.child.signal(SIGHUP)
        try await eventually("the refusal") { daemon.child.stderr.contains("configuration not reloaded") }
        #expect(daemon.child.stderr.contains("policy.json, line 3: grant 1: unknown user \"no-such-user\""))
        let kept = try await syncctl(as: 65534, ["put", "public/nobody/y", "1"], scratch: scratch)
        #expect(kept.status == 0, "the old policy should still allow it: \(kept.stderr)\nsyncd: \(daemon.child.stderr)")

        // A valid new policy takes effect without a restart.
        try #"{"grants":[{"prefix":"public/","groups":[65534],"read":true}]}"#.write(
            toFile: scratch.file("policy.json"),
            atomically: true,
            encoding: .utf8
        )
        daemon.child.signal(SIGHUP)
        try await eventually("the reload") { daemon.child.stderr.contains("configuration reloaded") }
        let refused = try await syncctl(as: 65534, ["put", "public/nobody/z", "1"], scratch: scratch)
        #expect(refused.status == 5, "the new policy should refuse it: \(refused.stderr)\nsyncd: \(daemon.child.stderr)")
        try await daemon.stop()
    }
}
