import NIOCore
import Synchronization

/// A clock whose sleeps are timers of ``MainEventLoop``'s loop: a main-actor task that sleeps on
/// it wakes on the main thread, and no other thread is woken.
///
/// `Task.sleep` and `ContinuousClock` sleep through the global executor even when called from
/// the main actor: the sleep starts on one of its threads, libdispatch's timer thread fires it,
/// and one of its workers hands the task back to the main actor, about five thread wake-ups a
/// sleep on Linux. A main-actor loop that paces itself, or an effect that debounces, then takes
/// the cores at the moments the process's own socket reads want them. Use this clock there, for
/// instance as a store's `continuousClock` dependency, or directly:
///
/// ```swift
/// let clock = MainEventLoop.clock
/// var next = clock.now
/// while true {
///     try await clock.sleep(until: next)
///     next = next.advanced(by: .milliseconds(10))
///     try await client.put("sensor/temperature", json: reading())
/// }
/// ```
///
/// Its instants are `ContinuousClock`'s. Called on the main actor, ``sleep(until:tolerance:)``
/// stays there (it is `nonisolated(nonsending)`); called elsewhere, it resumes where it was
/// called. Without ``MainEventLoop`` (a test, a program that does not call ``MainEventLoop/run(_:)``)
/// it sleeps as `ContinuousClock` does. The loop's timers have no tolerance: it is ignored.
public struct MainEventLoopClock: Clock {
    /// `ContinuousClock`'s instants.
    public typealias Instant = ContinuousClock.Instant

    /// The clock; every instance is the same clock.
    public init() {}

    /// The current instant of `ContinuousClock`.
    public var now: Instant { .now }

    /// `ContinuousClock`'s resolution.
    public var minimumResolution: Duration { ContinuousClock().minimumResolution }

    /// Sleeps until `deadline`, on a timer of the main event loop.
    /// - Throws: `CancellationError` when the task is cancelled before the deadline.
    public nonisolated(nonsending) func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        guard let executor = MainEventLoop.taskExecutor else {
            return try await ContinuousClock().sleep(until: deadline, tolerance: tolerance)
        }
        return try await EventLoopClock(executor).sleep(until: deadline)
    }
}

extension MainEventLoop {
    /// A clock whose sleeps are the main event loop's own timers (``MainEventLoopClock``).
    public static var clock: MainEventLoopClock { MainEventLoopClock() }
}
