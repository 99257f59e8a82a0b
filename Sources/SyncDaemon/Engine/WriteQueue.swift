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

    /// A write and who gets its result.
    struct Pending: Sendable {
        var request: WriteRequest
        var reply: Reply
    }

    /// Who gets a write's result.
    enum Reply: Sendable {
        /// A connection, with the other answers of the same commit.
        case answer(requestID: UInt64, target: any WriteAnswerTarget)
        /// A closure, called on the writer's thread.
        case callback(@Sendable (Result<WriteOutcome, SharedStateError>) -> Void)
    }

    private let condition = NSCondition()
    private var items: [Pending] = []
    private var isClosed = false

    /// Adds writes, in order; returns false, keeping nothing, once the queue is closed.
    func enqueue(_ pending: some Collection<Pending>) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if isClosed { return false }
        let wasEmpty = items.isEmpty
        items.append(contentsOf: pending)
        // The writer only waits on an empty queue.
        if wasEmpty { condition.signal() }
        return true
    }

    /// Blocks until writes arrive and takes up to `limit` of them, oldest first; an empty batch
    /// when `deadline` passes first; nil once the queue is closed and empty.
    func take(limit: Int, until deadline: ContinuousClock.Instant? = nil) -> [Pending]? {
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty && !isClosed {
            if let deadline {
                let remaining = ContinuousClock.now.duration(to: deadline)
                if remaining <= .zero { return [] }
                let seconds = Double(remaining.components.seconds) + Double(remaining.components.attoseconds) / 1e18
                _ = condition.wait(until: Date(timeIntervalSinceNow: seconds))
            } else {
                condition.wait()
            }
        }
        if items.isEmpty { return nil }
        if items.count <= limit {
            defer { items.removeAll(keepingCapacity: true) }
            return items
        }
        let batch = Array(items.prefix(limit))
        items.removeFirst(limit)
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
