/// Who commits next, as a value: an event loop committing its own turn's writes, the writer
/// thread committing what queued, or the writer doing the store's maintenance (for SQLite: moving
/// the journal into the database); and when the writer syncs what was appended, which needs no
/// turn (for SQLite: the journal's `fdatasync`). Every event returns what its caller must do;
/// nothing here blocks, locks or reads a clock, so every interleaving can be tested as values
/// (`CommitTurnsTests`). ``WriteQueue`` drives it under one lock.
///
/// The rules that make a lost wake-up impossible:
/// - The writer never waits without a deadline: ``nextForWriter(now:maintenanceDeadline:syncDeadline:limit:)``
///   answers `.wait(until:)` with the earlier of the store's maintenance and sync deadlines, never
///   later than ``longestWait`` from now.
/// - Whoever changes what the writer waits for wakes it: a write queued while the writer waits
///   and nobody commits; a commit that ends while the writer wants the turn, while writes are
///   queued, or after which maintenance or a sync is due sooner than the writer would wake.
/// - A sync takes no turn: it runs while a loop commits, so the interval's bound never waits
///   for a commit, and the loops keep committing their own writes meanwhile.
/// - Maintenance that is due outranks the event loops' own commits: once the writer found it
///   due while a loop committed, no loop reserves another commit (``reserveIfIdle()``) until
///   the writer had its turn, so a loop that always has writes cannot starve the journal's
///   sync.
/// - Maintenance that is due is preceded by one sync of whatever was appended, taken without the
///   turn (``hasSyncedForMaintenance``): the store's maintenance then finds nearly everything
///   synced and need not wait for the disk while it holds the turn (for SQLite: the move names
///   synced records in the journal and copies only the few appended since; a move that replaces
///   the journal, every 32 MiB, still syncs its files). Once that sync is done, the maintenance
///   goes before any other sync.
package struct CommitTurns<Write> {
    /// What the writer thread does next.
    package enum WriterAction {
        /// Commit these writes (the turn is the writer's); then call ``finishCommit(maintenanceDeadline:)``.
        case commit([Write])
        /// Do the store's maintenance (the turn is the writer's); then call ``finishCommit(maintenanceDeadline:)``.
        case maintain
        /// Sync what was appended; no turn is taken, so nothing to finish.
        case sync
        /// Wait until this instant, or until woken, then ask again.
        case wait(until: ContinuousClock.Instant)
        /// The queue is closed and empty: stop.
        case stop
    }

    /// What a caller of ``enqueue(_:)`` does next.
    package enum EnqueueAction: Equatable {
        /// The writes were refused: the queue is closed.
        case refused
        /// The writes queued; the writer will look at them without being woken.
        case queued
        /// The writes queued; wake the writer.
        case queuedWakingWriter
    }

    /// The longest the writer waits without looking again, whatever it waits for: a bound on
    /// what a wake-up this machine failed to ask for could cost.
    package static var longestWait: Duration { .milliseconds(100) }

    /// The writes waiting for the writer, oldest first.
    package private(set) var queued: [Write] = []
    /// An empty array with room, handed back by the writer (``recycle(_:)``): the next batch
    /// queues into it. Without it, each batch taken left the queue to allocate its room again.
    private var spare: [Write] = []
    /// Whether someone (a loop or the writer) holds the turn to commit.
    package private(set) var isCommitting = false
    package private(set) var isClosed = false
    /// Until when the writer waits, while it does; nil while it runs.
    package private(set) var writerWaitsUntil: ContinuousClock.Instant?
    /// Whether the writer found its maintenance due while a loop held the turn: loops queue
    /// until the writer had it.
    package private(set) var writerWantsTurn = false
    /// Whether the writer synced since the store's maintenance came due: the maintenance goes
    /// before any other sync; cleared once it is done (no longer due).
    package private(set) var hasSyncedForMaintenance = false

    package init() {}

    /// Queues writes, in order, for the writer.
    package mutating func enqueue(_ writes: some Collection<Write>) -> EnqueueAction {
        if isClosed { return .refused }
        queued.append(contentsOf: writes)
        // While someone commits, the end of that commit wakes the writer (writes are queued).
        return writerWaitsUntil != nil && !isCommitting ? .queuedWakingWriter : .queued
    }

    /// Reserves the next commit for an event loop: only when nobody commits, nothing is queued
    /// (queued writes go first) and the writer does not want the turn. The caller commits, then
    /// calls ``finishCommit(maintenanceDeadline:)``.
    package mutating func reserveIfIdle() -> Bool {
        guard !isClosed, !isCommitting, queued.isEmpty, !writerWantsTurn else { return false }
        isCommitting = true
        return true
    }

    /// Ends the commit (or maintenance) of whoever held the turn. Returns whether to wake the
    /// writer.
    ///
    /// - Parameters:
    ///   - maintenanceDeadline: When the store next wants maintenance, as it is now.
    ///   - syncDeadline: When the store next wants a sync, as it is now.
    package mutating func finishCommit(maintenanceDeadline: ContinuousClock.Instant?, syncDeadline: ContinuousClock.Instant? = nil) -> Bool
    {
        precondition(isCommitting, "a commit ended that nobody had begun")
        isCommitting = false
        guard let waitsUntil = writerWaitsUntil else { return false }
        if !queued.isEmpty || isClosed || writerWantsTurn { return true }
        if let deadline = Self.earlier(maintenanceDeadline, syncDeadline), deadline < waitsUntil { return true }
        return false
    }

    private static func earlier(_ first: ContinuousClock.Instant?, _ second: ContinuousClock.Instant?) -> ContinuousClock.Instant? {
        switch (first, second) {
        case (let first?, let second?): min(first, second)
        case (let first, let second): first ?? second
        }
    }

    /// What the writer does next, at `now`, with the store's maintenance due at
    /// `maintenanceDeadline` and its sync at `syncDeadline` (nil: none wanted): commit up to
    /// `limit` queued writes, maintain, sync, wait (always with a deadline), or stop. The writer
    /// calls it whenever it runs, after each commit, sync and wait.
    package mutating func nextForWriter(
        now: ContinuousClock.Instant, maintenanceDeadline: ContinuousClock.Instant?, syncDeadline: ContinuousClock.Instant? = nil,
        limit: Int
    ) -> WriterAction {
        writerWaitsUntil = nil
        let isMaintenanceDue = maintenanceDeadline.map { $0 <= now } ?? false
        // Maintenance that is no longer due was done, whichever way (the engine's writer also
        // does it right after a commit of its own).
        if !isMaintenanceDue { hasSyncedForMaintenance = false }
        // Before due maintenance, once, whatever was appended is synced (see the rules above).
        let syncsBeforeMaintenance = isMaintenanceDue && syncDeadline != nil && !hasSyncedForMaintenance
        let isSyncDue = syncDeadline.map { $0 <= now } ?? false || syncsBeforeMaintenance
        if isCommitting {
            // A sync needs no turn.
            if syncsBeforeMaintenance { return sync(beforeMaintenance: true) }
            // A loop commits: the end of its commit wakes the writer when queued writes or due
            // maintenance want it; a sync due meanwhile runs first, and never keeps the
            // maintenance from its turn.
            if isMaintenanceDue { writerWantsTurn = true }
            if isSyncDue { return sync(beforeMaintenance: isMaintenanceDue) }
            return wait(now: now, deadline: isMaintenanceDue ? syncDeadline : Self.earlier(maintenanceDeadline, syncDeadline))
        }
        if !queued.isEmpty {
            isCommitting = true
            writerWantsTurn = false
            if queued.count <= limit {
                let batch = queued
                queued = spare
                spare = []
                return .commit(batch)
            }
            let batch = Array(queued.prefix(limit))
            queued.removeFirst(limit)
            return .commit(batch)
        }
        // Due maintenance goes before an ordinary sync once its own sync is done: a sync that is
        // always due (a disk slower than the interval) cannot keep it waiting.
        if isMaintenanceDue && !syncsBeforeMaintenance {
            isCommitting = true
            writerWantsTurn = false
            hasSyncedForMaintenance = false
            return .maintain
        }
        if isSyncDue { return sync(beforeMaintenance: isMaintenanceDue) }
        if isClosed { return .stop }
        return wait(now: now, deadline: Self.earlier(maintenanceDeadline, syncDeadline))
    }

    /// A sync; while maintenance is due, the one that goes before it.
    private mutating func sync(beforeMaintenance: Bool) -> WriterAction {
        if beforeMaintenance { hasSyncedForMaintenance = true }
        return .sync
    }

    private mutating func wait(now: ContinuousClock.Instant, deadline: ContinuousClock.Instant?) -> WriterAction {
        let latest = now + Self.longestWait
        let until = deadline.map { min($0, latest) } ?? latest
        writerWaitsUntil = until
        return .wait(until: until)
    }

    /// Takes back a batch the writer is done with, emptied, to queue the next writes into.
    package mutating func recycle(_ batch: consuming [Write]) {
        var batch = batch
        batch.removeAll(keepingCapacity: true)
        if spare.capacity < batch.capacity { swap(&spare, &batch) }
    }

    /// Refuses new writes; the writer still commits those already queued, then stops. Returns
    /// whether to wake the writer.
    package mutating func close() -> Bool {
        isClosed = true
        return writerWaitsUntil != nil
    }
}
