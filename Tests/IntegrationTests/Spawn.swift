import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Starts child processes with `posix_spawn` and reaps them with `waitpid`, instead of through
/// Foundation's `Process`.
///
/// Foundation's `Process.run()` on Linux crashed the whole test process about once in ten
/// full-suite runs on a loaded machine (a `memmove` past the end of a page while Foundation's own
/// thread handled another child's exit), even with every spawn behind one lock; and it learns of
/// an exit through a socket that a child spawned meanwhile may inherit. Here nothing runs in the
/// background: the child's standard streams are files, and its exit is read when asked for.
enum Spawn {
    /// Starts `executable` with `arguments` and exactly `environment`; standard input from
    /// `stdin` (a descriptor, or /dev/null when nil), output and errors appended to the files at
    /// `stdoutPath` and `stderrPath`. The child inherits no other descriptor and starts with
    /// every signal at its default and none blocked.
    static func start(
        _ executable: String, _ arguments: [String], environment: [String: String], stdin: Int32?, stdoutPath: String,
        stderrPath: String
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let stdin {
            posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_APPEND | O_CREAT, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_APPEND | O_CREAT, 0o644)
        // Sockets of other tests must not live on in this child (a peer would never see them close).
        guard closeFrom(&actions, 3) == 0 else { throw SpawnError("cannot ask posix_spawn to close inherited descriptors") }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let code = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard code == 0 else { throw SpawnError("cannot start \(executable): \(String(cString: strerror(code)))") }
        return pid
    }

    /// Reaps the child if it has exited and returns its status (its exit code, or the signal
    /// that ended it); nil while it runs. A status comes back once only: the caller keeps it, since
    /// the id is free again afterwards and may name a later child.
    static func reap(_ pid: pid_t) -> Int32? {
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        // waitpid's encoding: the low 7 bits are the signal, or 0 with the exit code above them.
        return status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
    }

    /// Waits up to `timeout` for the child to exit and returns its status; kills it and returns
    /// nil past that.
    static func waitForExit(of pid: pid_t, timeout: Duration) -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let status = reap(pid) { return status }
            usleep(1_000)
        }
        kill(pid, SIGKILL)
        return nil
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc
    /// module does not declare.
    private static let closeFrom: @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32 = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
            fatalError("glibc 2.34 or later is needed to spawn test processes (posix_spawn_file_actions_addclosefrom_np)")
        }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()
}

struct SpawnError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
