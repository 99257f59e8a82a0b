import Foundation
import SharedStateWire

/// The writes waiting for the engine, in arrival order. Connections add to it from any thread; the
/// engine's writer thread takes everything that has piled up since its last commit, so concurrent
/// writes share one SQLite transaction (group commit).
///
/// The writer blocks on a condition variable rather than awaiting: it is a thread of its own that
/// commits synchronously, which saves the task hops an async writer pays on every write.
final class WriteQueue: @unchecked Sendable {
    // @unchecked: `items` and `isClosed` are only touched with `condition` locked.

    /// A write and what to call with its result.
    struct Pending: Sendable {
        var request: WriteRequest
        var completion: @Sendable (Result<WriteOutcome, SharedStateError>) -> Void
    }

    private let condition = NSCondition()
    private var items: [Pending] = []
    private var isClosed = false

    /// Adds a write; returns false, keeping nothing, once the queue is closed.
    func enqueue(_ pending: Pending) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if isClosed { return false }
        items.append(pending)
        condition.signal()
        return true
    }

    /// Blocks until writes arrive and takes up to `limit` of them, oldest first; nil once the
    /// queue is closed and empty.
    func take(limit: Int) -> [Pending]? {
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty && !isClosed { condition.wait() }
        if items.isEmpty { return nil }
        let count = min(limit, items.count)
        let batch = Array(items.prefix(count))
        items.removeFirst(count)
        return batch
    }

    /// Refuses new writes; ``take(limit:)`` still hands out the ones already queued.
    func close() {
        condition.lock()
        isClosed = true
        condition.broadcast()
        condition.unlock()
    }
}
