import Subprocess
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// A process `syncctl bench` starts (a subscriber of `bench fanout`): another syncctl with
/// standard input from /dev/null and its output where syncctl's goes, reaped by swift-subprocess
/// when it exits.
final class BenchChild: Sendable {
    private let state = Mutex<(pid: pid_t, status: Int32?)>((0, nil))

    private init() {}

    /// Starts `executable` with `arguments`; returns once it runs.
    static func start(_ executable: String, _ arguments: [String]) async throws -> BenchChild {
        let child = BenchChild()
        let (started, starting) = AsyncThrowingStream<Void, any Error>.makeStream()
        Task.detached {
            do {
                let result = try await Subprocess.run(
                    .path(FilePath(executable)), arguments: Arguments(arguments), input: .none, output: .currentStandardOutput,
                    error: .currentStandardError
                ) { execution in
                    child.state.withLock { $0.pid = execution.processIdentifier.value }
                    starting.finish()
                }
                let status: Int32
                switch result.terminationStatus {
                case .exited(let code): status = Int32(code)
                case .signaled(let signal): status = 128 + Int32(signal)
                }
                child.state.withLock { $0.status = status }
            } catch {
                starting.finish(throwing: error)
            }
        }
        for try await _ in started {}
        return child
    }

    /// Its exit status (128 + the signal when a signal ended it), or nil while it runs.
    var status: Int32? { state.withLock { $0.status } }

    /// Kills it, unless it already exited (its id may be another's by now).
    func kill() {
        state.withLock { state in
            if state.status == nil, state.pid > 0 { _ = Glibc.kill(state.pid, SIGKILL) }
        }
    }
}
