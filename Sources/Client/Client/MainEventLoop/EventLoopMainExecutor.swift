import NIOCore
import NIOPosix
import Synchronization
@_spi(ExperimentalCustomExecutors) import _Concurrency

/// The main actor's executor under ``MainEventLoop``: runs main-actor jobs as tasks of a NIO
/// event loop that runs on the main thread.
///
/// Jobs enqueued before the loop starts (the first one is the task that runs the program's
/// body) wait here and run as soon as it does.
final class EventLoopMainExecutor: MainExecutor, @unchecked Sendable {
    private struct State {
        var loop: (any EventLoop)?
        /// The loop as a task executor, made once with it (``MainEventLoopClock``'s sleeps prefer it).
        var taskExecutor: EventLoopTaskExecutor?
        var early: [UnownedJob] = []
    }

    // @unchecked Sendable: all mutable state is in this mutex.
    private let state = Mutex(State())

    /// The loop, once ``run()`` started it.
    var eventLoop: (any EventLoop)? { state.withLock { $0.loop } }

    /// The loop as a task executor, once ``run()`` started it.
    var taskExecutor: EventLoopTaskExecutor? { state.withLock { $0.taskExecutor } }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let loop: (any EventLoop)? = state.withLock { state in
            if state.loop == nil { state.early.append(job) }
            return state.loop
        }
        // From the loop's own thread (a main-actor task started by code on the main actor) this
        // queues the job behind the current one without waking anything; from another thread (a
        // task hopping back from the global executor) it wakes the loop.
        loop?.execute { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }

    /// Turns the calling (main) thread into the event loop and runs it until ``stop()``.
    func run() throws {
        MultiThreadedEventLoopGroup.withCurrentThreadAsEventLoop { loop in
            let early = self.state.withLock { state in
                state.loop = loop
                state.taskExecutor = EventLoopTaskExecutor(loop)
                defer { state.early = [] }
                return state.early
            }
            for job in early { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
        }
    }

    func stop() {
        eventLoop?.shutdownGracefully { _ in }
    }

    func isIsolatingCurrentContext() -> Bool? {
        eventLoop?.inEventLoop ?? false
    }

    func checkIsolated() {
        precondition(eventLoop?.inEventLoop ?? false, "not on the main actor: this is not MainEventLoop's thread")
    }
}
