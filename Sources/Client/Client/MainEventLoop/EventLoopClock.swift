import NIOCore
import Synchronization

/// A clock whose sleeps are timers of a client's event loop (``SharedStateClient/clock``): a
/// task that prefers the client's ``SharedStateClient/executor`` and sleeps on it wakes on the
/// thread that reads the client's socket, and no other thread is woken.
///
/// `Task.sleep` and `ContinuousClock` sleep through the global executor: libdispatch's timer
/// thread fires the sleep and the task is then handed back to the loop, two more thread wake-ups
/// a sleep than the loop's own timer. A task that paces its writes on the client's executor
/// spends them on every write:
///
/// ```swift
/// Task(executorPreference: client.executor) {
///     var next = client.clock.now
///     while true {
///         try await client.clock.sleep(until: next)
///         next = next.advanced(by: .milliseconds(10))
///         try await client.put("sensor/temperature", json: reading())
///     }
/// }
/// ```
///
/// Its instants are `ContinuousClock`'s. A sleep resumes where it was called (it is
/// `nonisolated(nonsending)`); while it waits, the task prefers the loop. The loop's timers have
/// no tolerance: it is ignored. ``MainEventLoopClock`` is this clock on the main event loop.
public struct EventLoopClock: Clock {
    /// `ContinuousClock`'s instants.
    public typealias Instant = ContinuousClock.Instant

    private let executor: EventLoopTaskExecutor

    init(_ executor: EventLoopTaskExecutor) {
        self.executor = executor
    }

    /// The current instant of `ContinuousClock`.
    public var now: Instant { .now }

    /// `ContinuousClock`'s resolution.
    public var minimumResolution: Duration { ContinuousClock().minimumResolution }

    /// Sleeps until `deadline`, on a timer of the loop.
    /// - Throws: `CancellationError` when the task is cancelled before the deadline.
    public nonisolated(nonsending) func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let delay = Instant.now.duration(to: deadline)
        guard delay > .zero else { return }
        let executor = self.executor
        // Swift 6.3 resumes a continuation on the task's executor preference, or on the global
        // executor's threads when there is none, even for a task that waits on an actor: the
        // loop is preferred while the task waits, unless it already is (D49).
        if withUnsafeCurrentTask(body: { $0?.unownedTaskExecutor == executor.asUnownedTaskExecutor() }) {
            try await Self.wait(delay, on: executor)
        } else {
            try await withTaskExecutorPreference(executor) { try await Self.wait(delay, on: executor) }
        }
    }

    private static nonisolated(nonsending) func wait(_ delay: Duration, on executor: EventLoopTaskExecutor) async throws {
        let sleep = LoopTimerSleep()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                sleep.start(continuation, on: executor.loop, after: delay)
            }
        } onCancel: {
            sleep.cancel()
        }
    }
}

/// One sleep on an event loop's timer: resumed by the timer, or by cancellation, once.
private final class LoopTimerSleep: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Void, any Error>?
        var timer: Scheduled<Void>?
        var isCancelled = false
    }

    private let state = Mutex(State())

    func start(_ continuation: CheckedContinuation<Void, any Error>, on loop: any EventLoop, after delay: Duration) {
        let isCancelled = state.withLock { state in
            if !state.isCancelled { state.continuation = continuation }
            return state.isCancelled
        }
        guard !isCancelled else { return continuation.resume(throwing: CancellationError()) }
        let (seconds, attoseconds) = delay.components
        let timer = loop.scheduleTask(in: .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)) {
            self.fire()
        }
        // Cancelled meanwhile: the continuation was resumed then, and the timer is not wanted.
        let cancelledMeanwhile = state.withLock { state in
            if !state.isCancelled { state.timer = timer }
            return state.isCancelled
        }
        if cancelledMeanwhile { timer.cancel() }
    }

    private func fire() {
        let continuation = state.withLock { state in
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume()
    }

    func cancel() {
        let (continuation, timer) = state.withLock { state in
            state.isCancelled = true
            defer { (state.continuation, state.timer) = (nil, nil) }
            return (state.continuation, state.timer)
        }
        timer?.cancel()
        continuation?.resume(throwing: CancellationError())
    }
}
