import Foundation
import Subprocess
import Synchronization
import SystemPackage
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A child process whose output goes to files; killed if still running when released.
///
/// Started with swift-subprocess: the child inherits no descriptor but its three streams (files
/// here, read when asked for), starts with every signal at its default and none blocked, and is
/// reaped by Subprocess's monitor when it exits. Nothing is spawned one at a time.
///
/// Whether it exited is asked of the kernel, not only of that monitor: Subprocess reaps a child
/// in a task of the global pool, which a loaded test process (two threads on two cores) may keep
/// waiting for seconds, while the kernel knows at once.
final class ChildProcess {
    /// Its process id.
    let pid: pid_t
    let stdoutPath: String
    let stderrPath: String
    let name: String
    /// Its status once it exited: its exit code, or the signal that ended it.
    private let exit: ExitRecord
    /// Runs until the child exits, then records its status.
    private let monitor: Task<Void, Never>

    /// Starts `executable`, with its output in files of `scratch`.
    ///
    /// - Parameters:
    ///   - environment: The child's environment; this process's (without `SYNCD_*`) when nil.
    ///   - journalStream: Sets `JOURNAL_STREAM` to the standard error file, as systemd does for the journal.
    convenience init(
        _ executable: String,
        _ arguments: [String],
        scratch: Scratch,
        name: String,
        stdin: String? = nil,
        environment: [String: String]? = nil,
        journalStream: Bool = false
    ) async throws {
        try await self.init(
            executable, arguments, directory: scratch.path, name: name, stdin: stdin, environment: environment,
            journalStream: journalStream)
    }

    /// Starts `executable`, with its output in files of `directory`.
    init(
        _ executable: String,
        _ arguments: [String],
        directory: String,
        name: String,
        stdin: String? = nil,
        environment: [String: String]? = nil,
        journalStream: Bool = false
    ) async throws {
        self.name = name
        stdoutPath = directory + "/\(name)-\(UUID().uuidString.prefix(4)).out"
        stderrPath = stdoutPath + ".err"
        var environment = environment ?? ProcessInfo.processInfo.environment
        if environment["SYNCD_SOCKET"] != nil { environment["SYNCD_SOCKET"] = nil }
        environment["SYNCD_DATABASE"] = nil
        let files: [FilePermissions] = [.ownerReadWrite, .groupRead, .otherRead]
        let output = try FileDescriptor.open(
            FilePath(stdoutPath), .writeOnly, options: [.append, .create], permissions: FilePermissions(files))
        let errors = try FileDescriptor.open(
            FilePath(stderrPath), .writeOnly, options: [.append, .create], permissions: FilePermissions(files))
        if journalStream {
            var status = stat()
            stat(stderrPath, &status)
            environment["JOURNAL_STREAM"] = "\(status.st_dev):\(status.st_ino)"
        } else {
            environment["JOURNAL_STREAM"] = nil
        }
        let input: FileDescriptor
        if let stdin {
            let inputPath = stdoutPath + ".in"
            _ = FileManager.default.createFile(atPath: inputPath, contents: Data(stdin.utf8))
            input = try FileDescriptor.open(FilePath(inputPath), .readOnly)
        } else {
            input = try FileDescriptor.open("/dev/null", .readOnly)
        }

        let exit = ExitRecord()
        let (started, starting) = AsyncThrowingStream<pid_t, any Error>.makeStream()
        let configuration = Configuration(
            executable: .path(FilePath(executable)),
            arguments: Arguments(arguments),
            environment: .custom(
                Dictionary(
                    uniqueKeysWithValues: environment.compactMap { name, value in Environment.Key(rawValue: name).map { ($0, value) } }))
        )
        monitor = Task.detached {
            do {
                let result = try await Subprocess.run(
                    configuration,
                    input: .fileDescriptor(input, closeAfterSpawningProcess: true),
                    output: .fileDescriptor(output, closeAfterSpawningProcess: true),
                    error: .fileDescriptor(errors, closeAfterSpawningProcess: true)
                ) { execution in
                    starting.yield(execution.processIdentifier.value)
                    starting.finish()
                }
                switch result.terminationStatus {
                case .exited(let code): exit.record(Int32(code))
                case .signaled(let signal): exit.record(Int32(signal))
                }
            } catch {
                starting.finish(throwing: error)
                exit.record(-1)
            }
        }
        self.exit = exit
        var iterator = started.makeAsyncIterator()
        guard let pid = try await iterator.next() else { throw TestFailure("\(name) did not start") }
        self.pid = pid
    }

    var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }
    /// Whether it still runs: not once the kernel says it exited, even before Subprocess reaped
    /// it, nor once reaped, even before Subprocess's task recorded its status.
    var isRunning: Bool {
        if exit.status != nil { return false }
        switch Self.kernelState(pid) {
        case .running: return true
        case .exited(let status):
            exit.record(status)
            return false
        case .reaped: return false
        }
    }

    /// The status the process exited with (its signal when a signal ended it), or nil while it
    /// runs (and in the moment between Subprocess reaping it and recording its status).
    var exitStatus: Int32? {
        if let status = exit.status { return status }
        guard case .exited(let status) = Self.kernelState(pid) else { return nil }
        // Kept: once Subprocess reaps the child, the kernel no longer knows.
        exit.record(status)
        return status
    }

    private enum KernelState {
        case running
        /// Exited, waiting to be reaped, with its status.
        case exited(Int32)
        /// Reaped already: no longer this process's child.
        case reaped
    }

    /// What the kernel says of the child, asked without reaping it (that stays Subprocess's).
    private static func kernelState(_ pid: pid_t) -> KernelState {
        var info = siginfo_t()
        guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 else {
            return errno == ECHILD ? .reaped : .running
        }
        return info._sifields._sigchld.si_pid == pid ? .exited(info._sifields._sigchld.si_status) : .running
    }

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
                let diagnosis = await Self.diagnose(pid)
                signal(SIGKILL)
                throw TestFailure("\(name) did not exit within \(timeout); stderr: \(stderr)\n\(diagnosis)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// What a process that does not exit is doing: each thread's kernel wait channel, and each
    /// thread's stack when gdb is installed.
    private static func diagnose(_ pid: Int32) async -> String {
        func read(_ path: String) -> String {
            ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "?").trimmingCharacters(in: .whitespacesAndNewlines)
        }
        var lines = ["state \(statFields(pid).first ?? "?")"]
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks.sorted() {
            lines.append("thread \(task) \(read("/proc/\(pid)/task/\(task)/comm")): \(read("/proc/\(pid)/task/\(task)/wchan"))")
        }
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/gdb"),
            let gdb = try? await Command.run(
                "/usr/bin/gdb", ["-p", "\(pid)", "-batch", "-ex", "thread apply all bt 25"], timeout: .seconds(60))
        {
            lines.append(gdb.output)
        }
        return lines.joined(separator: "\n")
    }

    /// What syncd logs when SQLite reports `SQLITE_MISUSE`.
    private static let sqliteMisuse = "SQLite error: API misuse"

    /// Sends `signal`, unless the process already exited (its id may be another's by now).
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

/// A child's status, recorded by its monitor once it exited.
private final class ExitRecord: Sendable {
    private let recorded = Mutex<Int32?>(nil)

    var status: Int32? { recorded.withLock { $0 } }

    func record(_ status: Int32) { recorded.withLock { $0 = status } }
}

/// A short command run to its end (`ip`, `gdb`, `python3`): its status and what it printed.
enum Command {
    struct Result {
        var status: Int32
        var output: String
        var errors: String
    }

    /// Runs `executable` with this process's environment; kills it and throws after `timeout`.
    static func run(_ executable: String, _ arguments: [String], timeout: Duration = .seconds(20)) async throws -> Result {
        let directory = "/tmp/ssi-command-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let name = URL(fileURLWithPath: executable).lastPathComponent
        let child = try await ChildProcess(
            executable, arguments, directory: directory, name: name, environment: ProcessInfo.processInfo.environment)
        let status = try await child.waitForExit(timeout: timeout)
        return Result(status: status, output: child.stdout, errors: child.stderr)
    }
}
