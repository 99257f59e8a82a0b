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

/// A child process whose output goes to files; killed if still running when released.
final class ChildProcess {
    /// Its process id.
    let pid: pid_t
    let stdoutPath: String
    let stderrPath: String
    let name: String

    /// Starts `executable`.
    ///
    /// - Parameters:
    ///   - environment: The child's environment; this process's (without `SYNCD_*`) when nil.
    ///   - journalStream: Sets `JOURNAL_STREAM` to the standard error file, as systemd does for the journal.
    init(
        _ executable: String,
        _ arguments: [String],
        scratch: Scratch,
        name: String,
        stdin: String? = nil,
        environment: [String: String]? = nil,
        journalStream: Bool = false
    ) throws {
        self.name = name
        stdoutPath = scratch.file("\(name)-\(UUID().uuidString.prefix(4)).out")
        stderrPath = stdoutPath + ".err"
        _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        var environment = environment ?? ProcessInfo.processInfo.environment
        if environment["SYNCD_SOCKET"] != nil { environment["SYNCD_SOCKET"] = nil }
        environment["SYNCD_DATABASE"] = nil
        if journalStream {
            var status = stat()
            stat(stderrPath, &status)
            environment["JOURNAL_STREAM"] = "\(status.st_dev):\(status.st_ino)"
        } else {
            environment["JOURNAL_STREAM"] = nil
        }
        if let stdin {
            var ends: [Int32] = [0, 0]
            guard pipe(&ends) == 0 else { throw TestFailure("cannot make a pipe for \(name)'s input") }
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            defer { close(ends[0]) }
            pid = try Spawn.start(
                executable, arguments, environment: environment, stdin: ends[0], stdoutPath: stdoutPath, stderrPath: stderrPath)
            let input = FileHandle(fileDescriptor: ends[1], closeOnDealloc: true)
            input.write(Data(stdin.utf8))
            try input.close()
        } else {
            pid = try Spawn.start(
                executable, arguments, environment: environment, stdin: nil, stdoutPath: stdoutPath, stderrPath: stderrPath)
        }
    }

    var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }
    var isRunning: Bool { exitStatus == nil }

    /// The status the process exited with (its signal when a signal ended it), or nil while it runs.
    var exitStatus: Int32? {
        reaped.withLock { reaped in
            if reaped == nil { reaped = Spawn.reap(pid) }
            return reaped
        }
    }

    /// Its status once reaped: reaping returns it once only.
    private let reaped = Mutex<Int32?>(nil)

    /// The user and system time it has used so far, in clock ticks (`/proc/PID/stat`); 0 when
    /// that cannot be read.
    var cpuTicks: Int {
        let fields = Self.statFields(pid)
        // From the state on: user time is the 12th field, system time the 13th.
        guard fields.count > 12 else { return 0 }
        return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
    }

    /// The fields of `/proc/PID/stat` from the third (the state) on; empty when it cannot be read.
    private static func statFields(_ pid: Int32) -> [Substring] {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let endOfName = stat.lastIndex(of: ")")
        else { return [] }
        return stat[stat.index(after: endOfName)...].split(whereSeparator: \.isWhitespace)
    }

    /// Waits for the process to exit and returns its status; kills it and throws after `timeout`.
    @discardableResult
    func waitForExit(timeout: Duration = .seconds(20)) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let status = exitStatus { return status }
            if ContinuousClock.now > deadline {
                let diagnosis = Self.diagnose(pid)
                kill(pid, SIGKILL)
                throw TestFailure("\(name) did not exit within \(timeout); stderr: \(stderr)\n\(diagnosis)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// What a process that does not exit is doing: each thread's kernel wait channel, and each
    /// thread's stack when gdb is installed.
    private static func diagnose(_ pid: Int32) -> String {
        func read(_ path: String) -> String {
            ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "?").trimmingCharacters(in: .whitespacesAndNewlines)
        }
        var lines = ["state \(statFields(pid).first ?? "?")"]
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks.sorted() {
            lines.append("thread \(task) \(read("/proc/\(pid)/task/\(task)/comm")): \(read("/proc/\(pid)/task/\(task)/wchan"))")
        }
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/gdb") {
            let output = "/tmp/ssi-gdb-\(pid)-\(UUID().uuidString.prefix(4)).txt"
            defer { try? FileManager.default.removeItem(atPath: output) }
            if let gdb = try? Spawn.start(
                "/usr/bin/gdb", ["-p", "\(pid)", "-batch", "-ex", "thread apply all bt 25"],
                environment: ProcessInfo.processInfo.environment, stdin: nil, stdoutPath: output, stderrPath: "/dev/null")
            {
                _ = Spawn.waitForExit(of: gdb, timeout: .seconds(60))
                lines.append((try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// What syncd logs when SQLite reports `SQLITE_MISUSE`.
    private static let sqliteMisuse = "SQLite error: API misuse"

    /// Sends `signal`, unless the process was already reaped (its id may be another's by now).
    func signal(_ signal: Int32) {
        guard isRunning else { return }
        kill(pid, signal)
    }

    deinit {
        // syncd logs each of SQLite's own reports (SQLiteErrorLog); an API misuse is its bug.
        let misuses = stderr.split(separator: "\n").filter { $0.contains(Self.sqliteMisuse) }
        #expect(misuses.isEmpty, "\(name) logged SQLite API misuse: \(misuses.joined(separator: "\n"))")
        guard isRunning else { return }
        kill(pid, SIGKILL)
        let deadline = ContinuousClock.now + .seconds(5)
        while isRunning && ContinuousClock.now < deadline { usleep(1_000) }
    }
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
    init(
        _ scratch: Scratch, socketPath: String? = nil, databasePath: String? = nil, extraArguments: [String] = [], launcher: [String] = [],
        environment: [String: String] = [:]
    ) async throws {
        self.scratch = scratch
        let command =
            launcher + [
                try Binaries.path("syncd"), "--socket", socketPath ?? scratch.socket, "--database", databasePath ?? scratch.database,
            ]
        child = try ChildProcess(
            command[0],
            Array(command.dropFirst()) + extraArguments,
            scratch: scratch,
            name: "syncd",
            environment: environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 }
        )
        let deadline = ContinuousClock.now + .seconds(20)
        while !child.stderr.contains("syncd ready") {
            if !child.isRunning { throw TestFailure("syncd exited: \(child.stderr)") }
            if ContinuousClock.now > deadline { throw TestFailure("syncd was not ready within 20 s: \(child.stderr)") }
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
    let child = try ChildProcess(
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
func startWatch(_ arguments: [String], scratch: Scratch) throws -> ChildProcess {
    try ChildProcess(
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
func startFeature(_ name: String, _ arguments: [String], scratch: Scratch) throws -> ChildProcess {
    try ChildProcess(try Binaries.path(name), ["--socket", scratch.socket] + arguments, scratch: scratch, name: name)
}

/// The value of `key` as a JSON object, read with `syncctl get`; nil when it does not exist.
func jsonObject(_ key: String, scratch: Scratch) async throws -> [String: Any]? {
    let result = try await syncctl(["get", key], scratch: scratch)
    guard result.status == 0 else { return nil }
    return try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
}
