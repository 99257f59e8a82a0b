import NIOCore
import NIOPosix

/// An event loop as a task executor: a task that prefers it (`withTaskExecutorPreference`) runs
/// its nonisolated work, and is resumed from a continuation, on the loop's thread.
///
/// Swift 6.3 resumes a continuation on the task's executor preference, or on the global
/// executor's threads when it has none, even for a task waiting on an actor: preferring the loop
/// that resumes it (the loop that read an answer, the loop whose timer fired) saves waking one of
/// those threads only to hop back.
final class EventLoopTaskExecutor: TaskExecutor {
    let loop: any EventLoop

    init(_ loop: any EventLoop) {
        self.loop = loop
    }

    /// The loop a new client reads its connections on, for its life: the main thread's under
    /// ``MainEventLoop``, otherwise the next of NIO's shared loops.
    static func forNewClient() -> EventLoopTaskExecutor {
        MainEventLoop.taskExecutor ?? EventLoopTaskExecutor(MultiThreadedEventLoopGroup.singleton.next())
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
