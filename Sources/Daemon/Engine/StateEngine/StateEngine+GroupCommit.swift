import Foundation
import Prometheus
import SharedStateWire

/// Group commit for a backend whose revisions syncd decides (a ``RevisionStore``): a group of
/// writes is committed by the event loop that read it when no other commit runs, or queues
/// (``WriteQueue``) for the writer thread, which takes what piled up as one group. Either way the
/// group is planned against the published entries, made durable by the store in one record,
/// then published and answered.
package extension StateEngine {
    /// Queues writes for the writer, or commits them on the caller's thread when `mayCommitHere`,
    /// no commit runs and none is queued; false, having taken nothing, once the engine takes no
    /// more writes.
    func enqueue(_ writes: some Collection<PendingWrite>, for store: any RevisionStore, mayCommitHere: Bool) -> Bool {
        // A commit that waits for the disk is the writer's to wait for, never an event loop's.
        if mayCommitHere, store.commitsOnSubmittingThread, queue.reserveIfIdle() {
            let batch = Array(writes)
            let limit = configuration.maxWritesPerCommit
            if batch.count <= limit {
                commitAndAnswer(batch, to: store)
            } else {
                // An event loop's turn may read more than a group holds: in groups, in order.
                for start in stride(from: 0, to: batch.count, by: limit) {
                    commitAndAnswer(Array(batch[start..<min(start + limit, batch.count)]), to: store)
                }
            }
            // The writer waits until the store's maintenance is due: the queue wakes it when the
            // commit made that sooner.
            queue.finishCommit(maintenanceDeadline: store.maintenanceDeadline, syncDeadline: store.syncDeadline)
            return true
        }
        return queue.enqueue(writes)
    }

    /// Runs the writer until ``shutDown()``, then commits what is still queued and returns.
    ///
    /// The writer is a thread of its own that commits synchronously: the store blocks, and a
    /// thread that may block saves the hops between tasks an async writer pays on every write.
    func runWriter(for store: any RevisionStore) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
                let thread = Thread { [self] in
                    writing: while true {
                        switch queue.next(
                            limit: configuration.maxWritesPerCommit, deadlines: { (store.maintenanceDeadline, store.syncDeadline) })
                        {
                        case .commit(let batch):
                            commitAndAnswer(batch, to: store)
                            if Self.holdsRestore(batch) { FreedElsewhere.free(consume batch) } else { queue.recycle(batch) }
                            // Still holding the turn: maintenance that came due meanwhile goes next.
                            if store.maintenanceDeadline.map({ $0 <= .now }) == true { performMaintenance(of: store) }
                        case .maintain:
                            performMaintenance(of: store)
                        case .sync:
                            // No turn was taken: nothing to finish.
                            store.syncAppended()
                            continue writing
                        case .stop:
                            break writing
                        }
                        queue.finishCommit(maintenanceDeadline: store.maintenanceDeadline, syncDeadline: store.syncDeadline)
                    }
                    performMaintenance(of: store, beforeStopping: true)
                    finished.resume()
                }
                thread.name = "syncd-writer"
                thread.start()
            }
        } onCancel: {
            queue.close()
        }
    }

    /// Lets the store do its work between commits, with the entries changed since it last wrote
    /// them out; forgets those once it did. Only while the writer holds the right to commit:
    /// nothing publishes meanwhile.
    private func performMaintenance(of store: any RevisionStore, beforeStopping: Bool = false) {
        let wrote = store.performMaintenance(
            changedEntries: {
                // A copy, read without the lock; released before the marks are cleared below, so
                // clearing them copies nothing.
                let table = published.withLock { $0.entries }
                return table.changes
            }, beforeStopping: beforeStopping)
        if wrote { published.withLock { $0.entries.forgetChanges() } }
    }

    /// Deletes the ephemeral keys of sessions from before a restart: their owners are gone.
    ///
    /// Call it once, before ``run()`` and before any client connects. A backend that forwards
    /// writes has none to delete here: its store expires them (etcd: their leases).
    func expireEphemeralKeysOfPreviousRun() throws(SharedStateError) {
        guard case .plannedHere(let store) = self.writes else { return }
        let keys = published.withLock { state in
            state.ephemeralKeys.values.flatMap { $0 }
        }
        guard !keys.isEmpty else { return }
        // The writer is not running yet: commit this one request directly.
        _ = try commit(
            [.expireEphemeral(session: nil, keys: keys.sorted())], origins: [.syncd("the sessions of an earlier run ended")],
            to: store
        )[0].get()
    }

    /// Whether `batch` holds a restore, whose million entries would take the writer a tenth of a
    /// second to free while other writes wait.
    private static func holdsRestore(_ batch: [PendingWrite]) -> Bool {
        batch.contains {
            if case .restore = $0.request { return true }
            return false
        }
    }

    /// What an event loop runs once it has written a timed write's events.
    private static func recordDelivery(since: ContinuousClock.Instant, in histogram: DurationHistogram) -> @Sendable () -> Void {
        { histogram.record(.now - since) }
    }

    /// Plans, commits and publishes a group of writes, and answers each. The answers to
    /// connections join the group's events: each event loop gets one task for both. The time
    /// from the earliest timed write's submission until the group's events are written to the
    /// watchers goes to ``DaemonMetrics/deliveryLatency``.
    private func commitAndAnswer(_ batch: [PendingWrite], to store: any RevisionStore) {
        var earliest: ContinuousClock.Instant?
        for index in batch.indices {
            if let since = batch[index].timedSince, earliest.map({ since < $0 }) ?? true { earliest = since }
        }
        _ = commit(batch, timedSince: earliest, to: store, answering: true)
    }

    /// Plans, commits and publishes a group of writes, each made by the origin at its index (syncd
    /// itself when there are none); returns each one's result.
    ///
    /// Only the writer calls it, or a caller that reserved the commit: one group at a time.
    func commit(
        _ batch: [WriteRequest], origins: [WriteOrigin] = [], to store: any RevisionStore
    ) -> [Result<WriteOutcome, SharedStateError>] {
        let pending = batch.enumerated().map { index, request in
            PendingWrite(request: request, origin: index < origins.count ? origins[index] : .syncd(""), reply: .callback { _ in })
        }
        return commit(pending, timedSince: nil, to: store)
    }

    /// Plans, commits and publishes a group of writes; returns each one's result, and answers each
    /// when `answering`.
    private func commit(
        _ batch: [PendingWrite], timedSince: ContinuousClock.Instant?, to store: any RevisionStore, answering: Bool = false
    ) -> [Result<WriteOutcome, SharedStateError>] {
        let plan = plan(batch, framing: store.recordFraming)
        let revisions = plan.revisions
        guard !revisions.isEmpty else {
            if answering { answer(batch, with: plan.results) }
            return plan.results
        }
        do {
            let started = ContinuousClock.now
            try store.persist(revisions, group: plan.group)
            metrics.commitLatency.record(ContinuousClock.now - started)
            if let failures = commitFailures.withLock({ $0.succeeded() }) {
                logger.notice("commits succeed again", metadata: ["backend": "\(backend.name)", "failures": "\(failures)"])
            }
            metrics.commits.increment()
            metrics.writesPerCommit.record(Double(batch.count))
            metrics.revisionsCommitted.increment(by: Int64(revisions.count))
            metrics.committedBytes.increment(by: Int64(revisions.reduce(0) { $0 + $1.logRecord.count }))
        } catch {
            metrics.commitFailures.increment()
            if let failures = commitFailures.withLock({ $0.failed(at: .now) }) {
                logger.error(
                    "commit failed; the writes were refused",
                    metadata: ["backend": "\(backend.name)", "error": "\(error)", "requests": "\(batch.count)", "failures": "\(failures)"]
                )
            }
            // The cells planning made the entries in go back: no key will hold them.
            published.withLock { state in
                for written in plan.entries.written { if let entry = written.entry { state.entries.discard(entry) } }
                for entry in plan.entries.replaced { state.entries.discard(entry) }
            }
            let failure = SharedStateError(.unavailable, "syncd could not commit to its database: \(error)")
            let results: [Result<WriteOutcome, SharedStateError>] = plan.results.map { result in result.flatMap { _ in .failure(failure) } }
            if answering { answer(batch, with: results) }
            return results
        }
        let timing = timedSince.map { since in Self.recordDelivery(since: since, in: metrics.deliveryLatency) }
        publish(revisions, entries: plan.entries, timing: timing, answering: answering ? (batch, plan.results) : nil)
        // Outside the engine's lock, which publishing holds while it hands the answers over.
        if answering { PendingWrite.callBack(batch, with: plan.results) }
        return plan.results
    }
}
