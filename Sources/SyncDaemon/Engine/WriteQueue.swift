import SharedStateWire
import Synchronization

/// The writes waiting for the engine, in arrival order. Connections add to it from any thread; the
/// engine's writer takes everything that has piled up since its last commit, so concurrent writes
/// share one SQLite transaction (group commit).
final class WriteQueue: Sendable {
    /// A write and what to call with its result.
    struct Pending: Sendable {
        var request: WriteRequest
        var completion: @Sendable (Result<WriteOutcome, SharedStateError>) -> Void
    }

    private struct State {
        var items: [Pending] = []
        var waiter: CheckedContinuation<Void, Never>?
        var isClosed = false
    }

    private let state = Mutex(State())

    /// Adds a write; returns false, keeping nothing, once the queue is closed.
    func enqueue(_ pending: Pending) -> Bool {
        let waiter: CheckedContinuation<Void, Never>?
        do {
            waiter = try state.withLock { state throws(QueueClosed) in
                if state.isClosed { throw QueueClosed() }
                state.items.append(pending)
                defer { state.waiter = nil }
                return state.waiter
            }
        } catch {
            return false
        }
        waiter?.resume()
        return true
    }

    /// Waits for writes and takes up to `limit` of them, oldest first; nil once the queue is closed
    /// and empty.
    func next(limit: Int) async -> [Pending]? {
        while true {
            let taken: [Pending]?? = state.withLock { state in
                if !state.items.isEmpty {
                    let count = min(limit, state.items.count)
                    let batch = Array(state.items.prefix(count))
                    state.items.removeFirst(count)
                    return .some(batch)
                }
                return state.isClosed ? .some(nil) : nil
            }
            if let taken { return taken }
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let resumeNow = state.withLock { state in
                        if !state.items.isEmpty || state.isClosed { return true }
                        state.waiter = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            } onCancel: {
                close()
            }
        }
    }

    /// Refuses new writes; `next` still hands out the ones already queued.
    func close() {
        let waiter = state.withLock { state in
            state.isClosed = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    private struct QueueClosed: Error {}
}
