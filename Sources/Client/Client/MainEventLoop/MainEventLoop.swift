import Foundation
import NIOCore
import NIOPosix
@_spi(ExperimentalCustomExecutors) import _Concurrency

/// Runs the main actor and the process's connections to syncd on one thread: the main thread,
/// as a NIO event loop.
///
/// By default a change from syncd crosses two threads before a main-actor reducer sees it: the
/// connection's event loop reads it, then (on Linux) one of libdispatch's worker threads runs the
/// main actor, once woken: one more thread to wake and schedule for every change (D2). Under
/// `MainEventLoop` the thread that reads the socket is the main actor's, so `.observe` sends a
/// change to the store inside the read, with no thread woken, and a lone write from the main
/// actor leaves from the same thread, and its answer resumes it on that thread too. (A task
/// waiting on a continuation of its own, such as a nonisolated `for try await` over a watch, is
/// still resumed through the global executor's threads unless it prefers the client's
/// ``SharedStateClient/executor``: Swift 6.3 resumes a continuation on the task's preferred
/// executor, else there. To pace main-actor code, sleep on ``clock``, which stays on the main
/// thread.)
///
/// Call it first thing in a synchronous `main`, before any `async` code has run:
///
/// ```swift
/// @main enum ThermostatMain {
///     static func main() {
///         MainEventLoop.run {
///             await ThermostatCommand.main()   // an AsyncParsableCommand, no longer @main
///         }
///     }
/// }
/// ```
///
/// Everything on the main actor now shares the thread with socket reads and writes, as in any
/// event-loop program: a reducer or main-actor task that blocks (a synchronous sleep, a long
/// computation) delays every connection of the process. While it blocks, nothing is read, so a
/// busy watcher's backlog stays in syncd, which resyncs the watch once it catches up (see
/// ``WatchStream``). `DispatchQueue.main` is not drained under `MainEventLoop`; use the main
/// actor instead.
///
/// It uses Swift's custom main executor hook (`_createExecutors(factory:)`), which the toolchain
/// still marks experimental.
public enum MainEventLoop {
    private struct Factory: ExecutorFactory {
        static let mainExecutor: any MainExecutor = EventLoopMainExecutor()
        static var defaultExecutor: any TaskExecutor { PlatformExecutorFactory.defaultExecutor }
    }

    /// Makes the main thread the main actor's event loop, runs `body` on the main actor, and
    /// exits the process with status 0 when it returns.
    ///
    /// Must be called from a synchronous `main` on the main thread, once, before anything runs on
    /// the main actor; otherwise it stops the process and says why.
    public static func run(_ body: sending @escaping @MainActor () async -> Void) -> Never {
        guard Thread.isMainThread else {
            fatalError("MainEventLoop.run must be called on the main thread, from a synchronous main")
        }
        unblockTerminationSignals()
        _createExecutors(factory: Factory.self)
        guard MainActor.executor is EventLoopMainExecutor else {
            fatalError("MainEventLoop.run must be called once, before any async code ran: the main actor already has \(MainActor.executor)")
        }
        Task { @MainActor in
            await body()
            exit(0)
        }
        do {
            try MainActor.executor.run()
        } catch {
            fatalError("the main event loop stopped: \(error)")
        }
        fatalError("the main event loop stopped before the program's body returned")
    }

    /// Lets SIGTERM, SIGINT, SIGHUP and SIGQUIT reach the main thread even when the parent
    /// started this process with them blocked (Foundation's `Process` does, from a libdispatch
    /// thread): `dispatchMain()` waits with every signal unblocked, and a process that handles
    /// none of them must still end on them, as it would under a shell or systemd.
    private static func unblockTerminationSignals() {
        var signals = sigset_t()
        sigemptyset(&signals)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGQUIT] { sigaddset(&signals, signal) }
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
    }

    /// The main thread's event loop while ``run(_:)`` runs it; nil in a process that did not call it.
    ///
    /// Connections to syncd are made on it when it exists.
    public static var eventLoop: (any EventLoop)? {
        (MainActor.executor as? EventLoopMainExecutor)?.eventLoop
    }

    /// The main thread's event loop as a task executor while ``run(_:)`` runs it; nil otherwise.
    static var taskExecutor: EventLoopTaskExecutor? {
        (MainActor.executor as? EventLoopMainExecutor)?.taskExecutor
    }
}
