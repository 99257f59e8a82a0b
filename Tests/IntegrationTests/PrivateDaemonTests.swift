import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `syncd --directory DIR`: a private syncd whose socket and database are in a directory of its
/// own, which says how every tool reaches it.
@Suite(.timeLimit(.minutes(1))) struct PrivateDaemonTests {
    @Test func aPrivateSyncdKeepsItsFilesInItsDirectoryAndSaysHowToReachIt() async throws {
        let scratch = try Scratch()
        let folder = scratch.path + "/project/.syncd"
        let socket = folder + "/syncd.sock"
        let daemon = try await ChildProcess(try Binaries.path("syncd"), ["--directory", folder], scratch: scratch, name: "syncd")
        try await eventually("syncd ready") { daemon.stderr.contains("syncd ready") }
        #expect(daemon.stdout.contains("export SYNCD_SOCKET=\(socket)"))
        #expect(daemon.stdout.contains("syncctl inspect --open"))

        let put = try await ChildProcess(
            try Binaries.path("syncctl"), ["--socket", socket, "put", "greeting", #""hello""#], scratch: scratch, name: "put")
        #expect(try await put.waitForExit() == 0)
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
        #expect(FileManager.default.fileExists(atPath: folder + "/state.sqlite"))

        // Started again on the same directory, it has what it had.
        let again = try await ChildProcess(try Binaries.path("syncd"), ["--directory", folder], scratch: scratch, name: "again")
        try await eventually("syncd ready again") { again.stderr.contains("syncd ready") }
        let get = try await ChildProcess(
            try Binaries.path("syncctl"), ["--socket", socket, "get", "greeting"], scratch: scratch, name: "get")
        #expect(try await get.waitForExit() == 0)
        #expect(get.stdout == "\"hello\"\n")
        again.signal(SIGTERM)
        #expect(try await again.waitForExit() == 0)
    }
}
