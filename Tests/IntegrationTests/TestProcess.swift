import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The directory holding the built `syncd` and `syncctl`: the one this test binary was built into.
enum Binaries {
    static let directory: String = {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
        // On Linux the test binary is `<build>/debug/SharedStatePackageTests.xctest`.
        while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("syncd").path), directory.path != "/" {
            directory.deleteLastPathComponent()
        }
        return directory.path
    }()

    static func path(_ name: String) throws -> String {
        let path = directory + "/" + name
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestFailure("\(name) is not built next to the tests (looked in \(directory)); run `swift build` first")
        }
        return path
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body`, which blocks (a read from a socket, a wait for a process), on a thread of its own,
/// and waits for it without holding a thread.
///
/// Every test's tasks share the cooperative thread pool, one thread per core: a call that blocks
/// one of them for seconds holds up the tests running meanwhile (an in-process engine whose
/// writer cannot start, a timeout that fires late), more so on a loaded machine.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}

/// A scratch directory for one test's socket, database and process output; removed afterwards.
final class Scratch {
    let path: String

    init() throws {
        path = "/tmp/ssi-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    var socket: String { path + "/syncd.sock" }

    /// A second socket path in the same directory.
    static func sibling(of scratch: Scratch) -> String { scratch.path + "/other.sock" }
    var database: String { path + "/db/state.sqlite" }
    func file(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// A syncd started for one test on the scratch directory's socket and database.
final class DaemonProcess {
    let child: ChildProcess
    let scratch: Scratch

    /// Starts syncd on `scratch`'s socket and database, and waits until it is ready.
    /// - Parameter launcher: A command that runs syncd (its path and arguments follow), such as
    ///   `ip netns exec NAME`.
    ///   - databasePath: The database, when not the scratch directory's.
    ///   - environment: Variables to set for syncd beyond this process's own.
    ///   - readyWithin: How long syncd may take to say it is ready.
    init(
        _ scratch: Scratch, socketPath: String? = nil, databasePath: String? = nil, extraArguments: [String] = [], launcher: [String] = [],
        environment: [String: String] = [:], readyWithin: Duration = .seconds(20)
    ) async throws {
        self.scratch = scratch
        let command =
            launcher + [
                try Binaries.path("syncd"), "--socket", socketPath ?? scratch.socket, "--database", databasePath ?? scratch.database,
            ]
        child = try await ChildProcess(
            command[0],
            Array(command.dropFirst()) + extraArguments,
            scratch: scratch,
            name: "syncd",
            environment: environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 }
        )
        let deadline = ContinuousClock.now + readyWithin
        while !child.stderr.contains("syncd ready") {
            if !child.isRunning { throw TestFailure("syncd exited: \(child.stderr)") }
            if ContinuousClock.now > deadline { throw TestFailure("syncd was not ready within \(readyWithin): \(child.stderr)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Sends SIGTERM and waits for a clean exit.
    func stop() async throws {
        child.signal(SIGTERM)
        let status = try await child.waitForExit()
        #expect(status == 0, "syncd exited with \(status): \(child.stderr)")
    }
}

/// The result of one syncctl run.
struct SyncctlResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs syncctl against the scratch socket and waits for it, at most `timeout`.
func syncctl(_ arguments: [String], scratch: Scratch, stdin: String? = nil, timeout: Duration = .seconds(20)) async throws -> SyncctlResult
{
    let child = try await ChildProcess(
        try Binaries.path("syncctl"),
        ["--socket", scratch.socket] + arguments,
        scratch: scratch,
        name: "syncctl",
        stdin: stdin
    )
    let status = try await child.waitForExit(timeout: timeout)
    return SyncctlResult(status: status, stdout: child.stdout, stderr: child.stderr)
}

/// Starts `syncctl watch` in the background.
func startWatch(_ arguments: [String], scratch: Scratch) async throws -> ChildProcess {
    try await ChildProcess(
        try Binaries.path("syncctl"), ["--socket", scratch.socket, "--json", "watch"] + arguments, scratch: scratch, name: "watch")
}

/// Waits until syncd counts `count` active watches (so a watch started with `syncctl watch` sees
/// every change made afterwards).
func waitForWatches(_ count: Int, scratch: Scratch) async throws {
    let deadline = ContinuousClock.now + .seconds(20)
    while true {
        let status = try await syncctl(["--json", "status"], scratch: scratch)
        if status.stdout.contains(#""watches":\#(count),"#) { return }
        if ContinuousClock.now > deadline { throw TestFailure("syncd never counted \(count) watches: \(status.stdout)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// Waits until `condition` holds, polling; throws after `timeout`.
func eventually(timeout: Duration = .seconds(20), _ what: String, _ condition: () throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        if ContinuousClock.now > deadline { throw TestFailure("timed out waiting for \(what)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// Waits until the asynchronous `condition` holds (syncctl runs, reads through a client),
/// polling every 50 ms; throws after `timeout`.
func eventuallyAsync(_ what: String, timeout: Duration = .seconds(30), _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        if ContinuousClock.now > deadline { throw TestFailure("timed out waiting for \(what)") }
        try await Task.sleep(for: .milliseconds(50))
    }
}

/// One line of `syncctl --json watch`.
struct WatchLine: Decodable, Equatable {
    var revision: UInt64
    var type: String
    var key: String
    var version: UInt64
}

func watchLines(_ output: String) throws -> [WatchLine] {
    try output.split(separator: "\n").map { try JSONDecoder().decode(WatchLine.self, from: Data($0.utf8)) }
}

/// Starts an example feature process (`climate-sensor`, ...) on the scratch directory's socket.
func startFeature(_ name: String, _ arguments: [String], scratch: Scratch) async throws -> ChildProcess {
    try await ChildProcess(try Binaries.path(name), ["--socket", scratch.socket] + arguments, scratch: scratch, name: name)
}

/// The value of `key` as a JSON object, read with `syncctl get`; nil when it does not exist.
func jsonObject(_ key: String, scratch: Scratch) async throws -> [String: Any]? {
    let result = try await syncctl(["get", key], scratch: scratch)
    guard result.status == 0 else { return nil }
    return try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
}
