import Foundation
import SharedStateWire

/// The writes waiting for the engine's writer, in arrival order, and the right to commit them
/// (for a backend that is a ``RevisionStore``).
///
/// Usually an event loop commits the writes of its turn itself: when nothing is queued and nobody
/// is committing, it reserves the commit (``reserveIfIdle()``) and makes it on its own thread,
/// which saves the two thread hand-offs of the queue. Writes that find a commit running, and those
/// only the writer may commit, queue here from any thread; the writer thread takes everything that
/// has piled up since its last commit, so they share one record of the store (group commit). One
/// commit runs at a time either way.
///
/// The writer blocks on a condition variable rather than awaiting: it is a thread of its own that
/// commits synchronously, which saves the task hops an async writer pays on every write.
package final class WriteQueue: @unchecked Sendable {
    // @unchecked: `items`, `isCommitting` and `isClosed` are only touched with `condition` locked.

    private let condition = NSCondition()
    private var items: [PendingWrite] = []
    /// An empty array with room, handed back by the writer (``recycle(_:)``): the next batch
    /// queues into it. Without it, each batch taken left the queue to allocate its room again,
    /// a block large enough that `malloc` first consolidated its free lists.
    private var spare: [PendingWrite] = []
    private var isCommitting = false
    private var isClosed = false

    /// Adds writes, in order; returns false, keeping nothing, once the queue is closed.
    func enqueue(_ pending: some Collection<PendingWrite>) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if isClosed { return false }
        let wasEmpty = items.isEmpty
        items.append(contentsOf: pending)
        // The writer only waits on an empty queue, or while another thread commits (which wakes
        // it when done).
        if wasEmpty && !isCommitting { condition.signal() }
        return true
    }

    /// Reserves the next commit for the caller when no write is queued and no commit is running;
    /// the caller then commits and calls ``finishCommit(wakeWriter:)``. False when it must queue.
    func reserveIfIdle() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !isClosed, !isCommitting, items.isEmpty else { return false }
        isCommitting = true
        return true
    }

    /// Blocks until writes arrive and no commit is running, reserves the commit, and takes up to
    /// `limit` writes, oldest first; takes an empty batch (still reserving the commit) when the
    /// time `deadline` gives has passed first; nil once the queue is closed, empty and idle.
    /// Whoever gets a batch calls ``finishCommit(wakeWriter:)`` when done.
    func take(limit: Int, until deadline: () -> ContinuousClock.Instant?) -> [PendingWrite]? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if !isCommitting {
                if !items.isEmpty {
                    isCommitting = true
                    if items.count <= limit {
                        let batch = items
                        items = spare
                        spare = []
                        return batch
                    }
                    let batch = Array(items.prefix(limit))
                    items.removeFirst(limit)
                    return batch
                }
                if isClosed { return nil }
                if let deadline = deadline() {
                    let remaining = ContinuousClock.now.duration(to: deadline)
                    if remaining <= .zero {
                        isCommitting = true
                        return []
                    }
                    let seconds = Double(remaining.components.seconds) + Double(remaining.components.attoseconds) / 1e18
                    _ = condition.wait(until: Date(timeIntervalSinceNow: seconds))
                    continue
                }
            }
            condition.wait()
        }
    }

    /// Takes back a batch the caller is done with, emptied here, to queue the next writes into
    /// its room.
    func recycle(_ batch: consuming [PendingWrite]) {
        var batch = batch
        // Outside the lock: releasing the writes may take a while.
        batch.removeAll(keepingCapacity: true)
        condition.lock()
        if spare.capacity < batch.capacity { swap(&spare, &batch) }
        condition.unlock()
    }

    /// Ends a commit reserved by ``reserveIfIdle()`` or ``take(limit:until:)``. Wakes the writer
    /// when writes queued up meanwhile, or when `wakeWriter` asks (its deadline changed).
    func finishCommit(wakeWriter: Bool = false) {
        condition.lock()
        isCommitting = false
        if wakeWriter || !items.isEmpty || isClosed { condition.signal() }
        condition.unlock()
    }

    /// Refuses new writes; ``take(limit:until:)`` still hands out the ones already queued.
    func close() {
        condition.lock()
        isClosed = true
        condition.broadcast()
        condition.unlock()
    }
}
