import Foundation
import SharedStateWire

/// The writes waiting for the engine's writer, and the turn to commit (for a backend that is a
/// ``RevisionStore``): ``CommitTurns`` decides, this class holds it under one lock and does
/// what it returns.
///
/// Usually an event loop commits the writes of its turn itself: when nothing is queued and nobody
/// is committing, it reserves the commit (``reserveIfIdle()``) and makes it on its own thread,
/// which saves the two thread hand-offs of the queue. Writes that find a commit running, and those
/// only the writer may commit, queue here from any thread; the writer thread takes everything that
/// has piled up since its last commit, so they share one record of the store (group commit). One
/// commit runs at a time either way.
///
/// The writer blocks on a condition variable rather than awaiting: it is a thread of its own that
/// commits synchronously, which saves the task hops an async writer pays on every write. Each
/// of its waits has a deadline (see ``CommitTurns``).
package final class WriteQueue: @unchecked Sendable {
    // @unchecked: `turns` is only touched with `condition` locked.

    private let condition = NSCondition()
    private var turns = CommitTurns<PendingWrite>()

    /// Adds writes, in order; returns false, keeping nothing, once the queue is closed.
    func enqueue(_ pending: some Collection<PendingWrite>) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        switch turns.enqueue(pending) {
        case .refused: return false
        case .queued: return true
        case .queuedWakingWriter:
            condition.signal()
            return true
        }
    }

    /// Reserves the next commit for the caller when no write is queued, no commit is running and
    /// the writer does not want its turn; the caller then commits and calls
    /// ``finishCommit(maintenanceDeadline:syncDeadline:)``. False when it must queue.
    func reserveIfIdle() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return turns.reserveIfIdle()
    }

    /// What the writer thread does next (see ``CommitTurns/WriterAction``, less the waits, which
    /// ``next(limit:deadlines:)`` does itself).
    enum WriterWork {
        case commit([PendingWrite])
        case maintain
        case sync
        case stop
    }

    /// Blocks until the writer has something to do and returns it: writes to commit, or the
    /// store's maintenance (either way the writer holds the turn until it calls
    /// ``finishCommit(maintenanceDeadline:syncDeadline:)``), a sync (no turn), or `.stop` once
    /// the queue is closed, empty and idle.
    ///
    /// - Parameter deadlines: The store's maintenance and sync deadlines, read afresh at each look.
    func next(
        limit: Int, deadlines: () -> (maintenance: ContinuousClock.Instant?, sync: ContinuousClock.Instant?)
    ) -> WriterWork {
        condition.lock()
        defer { condition.unlock() }
        while true {
            let (maintenance, sync) = deadlines()
            let until: ContinuousClock.Instant
            switch turns.nextForWriter(now: .now, maintenanceDeadline: maintenance, syncDeadline: sync, limit: limit) {
            case .commit(let batch): return .commit(batch)
            case .maintain: return .maintain
            case .sync: return .sync
            case .stop: return .stop
            case .wait(let deadline): until = deadline
            }
            let remaining = ContinuousClock.now.duration(to: until)
            if remaining > .zero {
                let seconds = Double(remaining.components.seconds) + Double(remaining.components.attoseconds) / 1e18
                _ = condition.wait(until: Date(timeIntervalSinceNow: seconds))
            }
        }
    }

    /// Takes back a batch the writer is done with, to queue the next writes into its room.
    func recycle(_ batch: consuming [PendingWrite]) {
        var batch = batch
        // Outside the lock: releasing the writes may take a while.
        batch.removeAll(keepingCapacity: true)
        condition.lock()
        turns.recycle(batch)
        condition.unlock()
    }

    /// Ends a commit reserved by ``reserveIfIdle()`` or handed out by ``next(limit:deadlines:)``,
    /// waking the writer when it has something to do.
    ///
    /// - Parameters:
    ///   - maintenanceDeadline: When the store next wants maintenance, read after the commit.
    ///   - syncDeadline: When it next wants a sync, read after the commit.
    func finishCommit(maintenanceDeadline: ContinuousClock.Instant?, syncDeadline: ContinuousClock.Instant?) {
        condition.lock()
        if turns.finishCommit(maintenanceDeadline: maintenanceDeadline, syncDeadline: syncDeadline) { condition.signal() }
        condition.unlock()
    }

    /// Refuses new writes; ``next(limit:deadlines:)`` still hands out the ones already queued.
    func close() {
        condition.lock()
        if turns.close() { condition.broadcast() }
        condition.unlock()
    }
}
