import Foundation
import Logging
import Prometheus
import SharedStateWire
import Synchronization

/// The writer: write requests queue, one thread takes them in groups, plans each against the
/// engine's entries, commits the group in one transaction, then publishes it (see
/// ``SQLiteBackend``).
extension SQLiteBackend {
    func submit(_ writes: some Collection<WriteQueue.Pending>, to engine: StateEngine, mayCommitHere: Bool) -> Bool {
        // With `--durability full` a commit waits for an fsync: that is the writer's to wait for,
        // never an event loop's.
        if mayCommitHere, storage.durability != .full, queue.reserveIfIdle() {
            let deadline = storage.materializationDeadline
            let batch = Array(writes)
            StateEngine.reply(to: batch, with: commit(batch, to: engine))
            // The writer sleeps until the next materialisation is due: tell it when that changed.
            queue.finishCommit(wakeWriter: storage.materializationDeadline != deadline)
            return true
        }
        return queue.enqueue(writes)
    }

    /// Runs the writer until ``shutDown()``, then commits what is still queued and returns.
    ///
    /// The writer is a thread of its own that commits synchronously: SQLite blocks, and a thread
    /// that may block saves the hops between tasks an async writer pays on every write.
    func run(publishingTo engine: StateEngine) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
                let thread = Thread { [self] in
                    while let batch = queue.take(limit: maxRequestsPerCommit, until: { storage.materializationDeadline }) {
                        let isIdle = batch.isEmpty
                        if !isIdle {
                            StateEngine.reply(to: batch, with: commit(batch, to: engine))
                            if Self.holdsRestore(batch) { FreedElsewhere.free(consume batch) }
                        }
                        if isIdle || storage.isMaterializationDue { materialize() }
                        queue.finishCommit()
                    }
                    materialize()
                    finished.resume()
                }
                thread.name = "syncd-writer"
                thread.start()
            }
        } onCancel: {
            shutDown()
        }
    }

    func shutDown() {
        queue.close()
    }

    /// Brings the database's `entries` table up to date with the committed state (see
    /// ``Storage/materialize()``). A failure loses nothing: the change log has every change, and
    /// the writer tries again later.
    private func materialize() {
        do {
            try storage.materialize()
        } catch {
            logger.error(
                "could not write the current entries to the database; will retry",
                metadata: ["database": "\(storage.path)", "error": "\(error)"]
            )
        }
    }

    /// Whether `batch` holds a restore, whose million entries would take the writer a tenth of a
    /// second to free while other writes wait.
    private static func holdsRestore(_ batch: [WriteQueue.Pending]) -> Bool {
        batch.contains {
            if case .restore = $0.request { return true }
            return false
        }
    }

    /// What an event loop runs once it has written a timed write's events.
    private static func recordDelivery(since: ContinuousClock.Instant, in histogram: DurationHistogram) -> @Sendable () -> Void {
        { histogram.record(.now - since) }
    }

    /// Plans, commits and publishes a group of writes; returns each one's result. The time from
    /// the earliest timed write's submission until the group's events are written to the
    /// watchers goes to ``DaemonMetrics/deliveryLatency``.
    func commit(_ batch: [WriteQueue.Pending], to engine: StateEngine) -> [Result<WriteOutcome, SharedStateError>] {
        commit(batch.map(\.request), origins: batch.map(\.origin), timedSince: batch.lazy.compactMap(\.timedSince).min(), to: engine)
    }

    /// Plans, commits and publishes a group of writes, each made by the origin at its index (syncd
    /// itself when there are none); returns each one's result.
    func commit(
        _ batch: [WriteRequest], origins: [WriteOrigin] = [], timedSince: ContinuousClock.Instant? = nil, to engine: StateEngine
    ) -> [Result<WriteOutcome, SharedStateError>] {
        let plan = engine.plan(batch, origins: origins)
        let revisions = plan.revisions
        guard !revisions.isEmpty else { return plan.results }
        let metrics = engine.metrics
        do {
            let newWriters = recordedWriters.withLock { recorded in
                revisions.compactMap { revision -> WriterIdentity? in
                    guard let writer = revision.writer else { return nil }
                    return recorded.updateValue(revision.revision, forKey: writer.session) == nil ? writer : nil
                }
            }
            let started = ContinuousClock.now
            do {
                try storage.commit(revisions, recording: newWriters)
            } catch {
                recordedWriters.withLock { recorded in for writer in newWriters { recorded[writer.session] = nil } }
                throw error
            }
            metrics.commitLatency.record(ContinuousClock.now - started)
            metrics.commits.increment()
            metrics.writesPerCommit.record(Double(batch.count))
            metrics.revisionsCommitted.increment(by: Int64(revisions.count))
            metrics.committedBytes.increment(by: Int64(revisions.reduce(0) { $0 + $1.logRecord.count }))
        } catch {
            metrics.commitFailures.increment()
            logger.error(
                "commit failed; the writes were refused",
                metadata: ["database": "\(storage.path)", "error": "\(error)", "requests": "\(batch.count)"]
            )
            let failure = SharedStateError(.unavailable, "syncd could not commit to its database: \(error)")
            return plan.results.map { result in result.flatMap { _ in .failure(failure) } }
        }
        let timing = timedSince.map { since in Self.recordDelivery(since: since, in: metrics.deliveryLatency) }
        engine.publish(revisions, entries: plan.entries, timing: timing)
        return plan.results
    }
}
