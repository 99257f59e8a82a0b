import Foundation
import Logging
import Prometheus
import SharedStateWire
import Synchronization

/// The writer: write requests queue, one thread takes them in groups, plans each against the state
/// the earlier ones left, commits the group in one transaction, then publishes it (see
/// ``StateEngine``).
extension StateEngine {
    /// Queues a write made by `origin` (syncd itself by default); `completion` is called on the
    /// writer's thread once it is committed, or has failed.
    func submit(
        _ request: WriteRequest,
        origin: WriteOrigin = .syncd(""),
        completion: @escaping @Sendable (Result<WriteOutcome, SharedStateError>) -> Void
    ) {
        let pending = WriteQueue.Pending(
            request: request, origin: origin, reply: .callback(completion),
            timedSince: metrics.samplesDelivery() ? .now : nil)
        if !queue.enqueue(CollectionOfOne(pending)) {
            completion(.failure(Self.shuttingDown))
        }
    }

    /// Queues a connection's writes, in order; `target` gets their answers, those of one commit
    /// together, once they are committed or have failed.
    ///
    /// - Parameter mayCommitHere: Whether the caller would rather commit on its own thread than
    ///   hand over, when nothing else is queued: a client waiting for one write at a time saves
    ///   the two thread wake-ups of the hand-off. A client with writes in flight is better served
    ///   by the writer, while the caller goes on reading. Never with `--durability full`.
    func submit(
        _ requests: [(id: UInt64, request: WriteRequest, cause: String)],
        by writer: WriterIdentity? = nil,
        answeringTo target: some WriteAnswerTarget,
        mayCommitHere: Bool = false
    ) {
        guard !requests.isEmpty else { return }
        // The first of the requests submitted together stands for them all.
        let timedSince: ContinuousClock.Instant? = metrics.samplesDelivery() ? .now : nil
        let pending = requests.lazy.enumerated().map { index, request in
            WriteQueue.Pending(
                request: request.request, origin: WriteOrigin(writer: writer, cause: request.cause),
                reply: .answer(requestID: request.id, target: target), timedSince: index == 0 ? timedSince : nil)
        }
        // With `--durability full` a commit waits for an fsync: that is the writer's to wait for,
        // never an event loop's.
        if mayCommitHere, storage.durability != .full, queue.reserveIfIdle() {
            let deadline = storage.materializationDeadline
            let batch = Array(pending)
            Self.reply(to: batch, with: commit(batch.map(\.request), origins: batch.map(\.origin), timedSince: Self.timedSince(batch)))
            // The writer sleeps until the next materialisation is due: tell it when that changed.
            queue.finishCommit(wakeWriter: storage.materializationDeadline != deadline)
            return
        }
        if !queue.enqueue(pending) {
            let batch = DeliveryBatch()
            target.receive(requests.map { WriteAnswer(requestID: $0.id, result: .failure(Self.shuttingDown)) }, in: batch)
            batch.dispatch()
        }
    }

    private static let shuttingDown = SharedStateError(.unavailable, "syncd is shutting down and takes no more writes")

    /// Runs the writer until ``shutDown()``, then commits what is still queued and returns.
    ///
    /// The writer is a thread of its own that commits synchronously: SQLite blocks, and a thread
    /// that may block saves the hops between tasks an async writer pays on every write.
    func runWriter() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
                let thread = Thread { [self] in
                    while let batch = queue.take(limit: configuration.maxRequestsPerCommit, until: { storage.materializationDeadline }) {
                        let isIdle = batch.isEmpty
                        if !isIdle {
                            let results = commit(batch.map(\.request), origins: batch.map(\.origin), timedSince: Self.timedSince(batch))
                            Self.reply(to: batch, with: results)
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

    /// When the earliest timed write of `batch` was submitted, if one is.
    private static func timedSince(_ batch: [WriteQueue.Pending]) -> ContinuousClock.Instant? {
        batch.lazy.compactMap(\.timedSince).min()
    }

    /// Hands each write's result to whoever waits for it: every answer for one connection in a
    /// single call, in submission order.
    private static func reply(to batch: [WriteQueue.Pending], with results: [Result<WriteOutcome, SharedStateError>]) {
        var answers: [ObjectIdentifier: (target: any WriteAnswerTarget, answers: [WriteAnswer])] = [:]
        var order: [ObjectIdentifier] = []
        for (pending, result) in zip(batch, results) {
            switch pending.reply {
            case .callback(let completion):
                completion(result)
            case .answer(let requestID, let target):
                let identifier = ObjectIdentifier(target)
                if answers[identifier] == nil {
                    answers[identifier] = (target, [])
                    order.append(identifier)
                }
                answers[identifier]!.answers.append(WriteAnswer(requestID: requestID, result: result))
            }
        }
        let batch = DeliveryBatch()
        for identifier in order {
            let group = answers[identifier]!
            group.target.receive(group.answers, in: batch)
        }
        batch.dispatch()
    }

    /// Stops taking writes; ``runWriter()`` returns once those already queued are committed.
    func shutDown() {
        queue.close()
    }

    /// Plans, commits and publishes a group of writes, each made by the origin at its index (syncd
    /// itself when there are none); returns each one's result. With `timedSince`, the time from
    /// then until the group's events are written to the watchers goes to
    /// ``DaemonMetrics/deliveryLatency``.
    func commit(
        _ batch: [WriteRequest], origins: [WriteOrigin] = [], timedSince: ContinuousClock.Instant? = nil
    ) -> [Result<WriteOutcome, SharedStateError>] {
        // Keys written by earlier requests of this batch: nil means deleted.
        var overlay: [String: Entry?] = [:]
        var revision = published.withLock { $0.revision }
        var results: [Result<WriteOutcome, SharedStateError>] = []
        var revisions: [CommittedRevision] = []
        results.reserveCapacity(batch.count)

        for (index, var request) in batch.enumerated() {
            let origin = index < origins.count ? origins[index] : .syncd("")
            if case .expireEphemeral(let session?, _) = request {
                var keys = published.withLock { $0.ephemeralKeys[session] ?? [] }
                for (key, entry) in overlay where entry?.ephemeralSession == session { keys.insert(key) }
                request = .expireEphemeral(session: session, keys: keys.sorted())
            }
            if case .restore(let entries, let currentKeys, let basis) = request {
                // A restore makes the state as the backup has it: after the writes planned
                // before it in this batch too.
                let candidates: (entries: [Entry], currentKeys: [String])
                if let basis {
                    // Narrowed off the writer at basis.revision: only the keys written since
                    // need another look.
                    let written = keysWritten(after: basis.revision) + overlay.keys
                    candidates = RestoreCandidates.adding(written, to: entries, currentKeys: currentKeys, basis: basis)
                } else {
                    let order = published.withLock { $0.entries.order }
                    candidates = RestoreCandidates.find(in: entries, against: order, written: Set(overlay.keys))
                }
                request = .restore(entries: candidates.entries, currentKeys: candidates.currentKeys)
            }
            do {
                let plan = try WritePlanner.plan(request, revision: revision + 1) { key in
                    if let written = overlay[key] { return written }
                    return published.withLock { $0.entries[key] }?.entry(key: key)
                }
                if !plan.changes.isEmpty {
                    revision += 1
                    for change in plan.changes {
                        overlay.updateValue(change.type == .put ? change.entry : nil, forKey: change.key)
                    }
                    revisions.append(CommittedRevision(revision: revision, changes: plan.changes, origin: origin))
                }
                results.append(.success(plan.outcome))
            } catch {
                results.append(.failure(error))
            }
        }

        if !revisions.isEmpty {
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
                return results.map { result in result.flatMap { _ in .failure(failure) } }
            }
            // Made before taking the lock, which readers share.
            let stored = overlay.mapValues { $0.map(StoredEntry.make) }
            let timing = timedSince.map { since in Self.recordDelivery(since: since, in: metrics.deliveryLatency) }
            published.withLock { state in
                if state.watches.wantsPreviousValues {
                    // Before the table changes: it holds every key's entry before this batch.
                    var latest: [String: Entry?] = [:]
                    for index in revisions.indices {
                        revisions[index].findPrevious(in: &latest) { key in
                            state.entries[key].map { .entry($0.entry(key: key)) } ?? .absent
                        }
                    }
                }
                for (key, entry) in stored {
                    state.set(key, to: entry)
                }
                state.revision = revision
                state.restoreJournal?.record(revisions)
                metrics.eventsDelivered.increment(by: Int64(state.watches.deliver(revisions, afterWriting: timing)))
            }
        }
        return results
    }
}
