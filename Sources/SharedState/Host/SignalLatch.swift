import Synchronization

/// Remembers the first termination signal, and wakes whoever waits for one.
final class SignalLatch: Sendable {
    private struct State {
        var signal: Int32?
        var waiters: [Int: CheckedContinuation<Int32?, Never>] = [:]
        var nextWaiter = 0
    }

    private let state = Mutex(State())

    /// The signal received, if any.
    var signal: Int32? { state.withLock { $0.signal } }

    func fire(_ signal: Int32) {
        let waiters = state.withLock { state -> [CheckedContinuation<Int32?, Never>] in
            guard state.signal == nil else { return [] }
            state.signal = signal
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: signal) }
    }

    /// Returns the signal once one arrives; nil if the waiting task is cancelled first.
    func wait() async -> Int32? {
        let key = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now: Int32?? = state.withLock { state in
                    if let signal = state.signal { return .some(signal) }
                    if Task.isCancelled { return .some(nil) }
                    state.waiters[key] = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: key) }?.resume(returning: nil)
        }
    }
}
