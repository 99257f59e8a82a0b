import Foundation
import SharedStateWire

/// Writes: submitted, committed through the backend, published, then answered (see
/// ``StateEngine``).
package extension StateEngine {
    /// Submits a write made by `origin` (syncd itself by default); `completion` is called, on
    /// whichever thread publishes it, once it is committed and published, or has failed.
    func submit(
        _ request: WriteRequest,
        origin: WriteOrigin = .syncd(""),
        completion: @escaping @Sendable (Result<WriteOutcome, SharedStateError>) -> Void
    ) {
        let pending = PendingWrite(
            request: request, origin: origin, reply: .callback(completion),
            timedSince: metrics.samplesDelivery() ? .now : nil)
        if !take(CollectionOfOne(pending), mayCommitHere: false) {
            completion(.failure(Self.shuttingDown))
        }
    }

    /// Submits a connection's writes (``PendingWrite/init(request:origin:answering:to:)``), in
    /// order; their targets get the answers, those of one commit together, once they are
    /// committed and published, or have failed. The caller times the first of them when
    /// ``DaemonMetrics/samplesDelivery()`` says so: it stands for them all.
    ///
    /// - Parameter mayCommitHere: Whether the caller would rather commit on its own thread than
    ///   hand over, when no other commit runs and nothing is queued: an event loop with the writes
    ///   of its turn saves the writer's two wake-ups per group (D35). Only a ``RevisionStore``
    ///   commits here, and only when its commit does not wait for the disk.
    func submit(_ writes: [PendingWrite], mayCommitHere: Bool = false) {
        guard !writes.isEmpty else { return }
        if !take(writes, mayCommitHere: mayCommitHere) {
            answer(writes, with: Array(repeating: .failure(Self.shuttingDown), count: writes.count))
        }
    }

    /// Answers writes that publish nothing: their answers to connections go out in order with
    /// what the engine sends, their callbacks are called at once.
    func answer(_ writes: [PendingWrite], with results: [Result<WriteOutcome, SharedStateError>]) {
        var round = DeliveryRound()
        PendingWrite.answer(writes, with: results, in: &round)
        guard !round.isEmpty else { return }
        handOver(published.withLock { delivery.place(round, waiting: &$0.waitingRounds) })
    }

    /// Hands over what ``DeliveryOrder/place(_:waiting:)`` left to the caller, once it has
    /// released the state lock.
    internal func handOver(_ place: DeliveryOrder.Place) {
        delivery.handOver(place) {
            published.withLock { state in
                var waiting: [DeliveryRound] = []
                swap(&waiting, &state.waitingRounds)
                return waiting
            }
        }
    }

    static let shuttingDown = SharedStateError(.unavailable, "syncd is shutting down and takes no more writes")

    /// Hands writes to the writer or to the backend, by how the backend commits them.
    private func take(_ writes: some Collection<PendingWrite>, mayCommitHere: Bool) -> Bool {
        switch self.writes {
        case .plannedHere(let store): return enqueue(writes, for: store, mayCommitHere: mayCommitHere)
        case .forwarded(let forwarder):
            // Those refused are answered already: the others are answered here if not taken.
            let kept = keepingToSchemas(writes)
            if !forwarder.forward(kept, answer: { [self] write, result in answer([write], with: [result]) }) {
                answer(kept, with: Array(repeating: .failure(Self.shuttingDown), count: kept.count))
            }
            return true
        }
    }

    /// The writes that keep to the schemas (see ``PrefixSchemas/check(_:values:)``), checked
    /// against the published state before they are forwarded; the others are answered with why.
    ///
    /// Another host's writes reach the published state only once the backend reports them: a
    /// schema set there meanwhile is not yet seen here.
    private func keepingToSchemas(_ writes: some Collection<PendingWrite>) -> [PendingWrite] {
        var schemas = published.withLock { $0.schemas }
        var kept: [PendingWrite] = []
        kept.reserveCapacity(writes.count)
        for write in writes {
            do {
                schemas = try schemas.check(write.request) { prefix in values(under: prefix) }
                kept.append(write)
            } catch {
                metrics.countRefusal(error)
                answer([write], with: [.failure(error)])
            }
        }
        return kept
    }

    /// Commits writes until ``shutDown()``: runs the writer for a ``RevisionStore``, the backend
    /// reporting its store's revisions for a ``WriteForwarder``. Returns once the writes taken
    /// before the shutdown are answered.
    func runWrites() async {
        switch self.writes {
        case .plannedHere(let store):
            await runWriter(for: store)
        case .forwarded(let forwarder):
            await forwarder.run { [self] report in apply(report) }
        }
    }

    /// Stops taking writes; ``runWrites()`` returns once those already taken are answered.
    func shutDown() {
        switch self.writes {
        case .plannedHere: queue.close()
        case .forwarded(let forwarder): forwarder.shutDown()
        }
    }

    /// Does what a backend reported (see ``BackendReport``).
    func apply(_ report: BackendReport) {
        switch report {
        case .committed(let revisions):
            publish(revisions)
        case .reached(let revision):
            published.withLock { $0.revision = max($0.revision, revision) }
        case .readAgain(let entries, let revision):
            publishDifference(to: entries, at: revision)
        case .forgotten(let revision):
            published.withLock { $0.compactedRevision = max($0.compactedRevision, revision) }
        }
    }

    /// Makes the published entries equal to `target`, the store's at `revision`, as one revision
    /// (none when nothing differs), and forgets the history before it.
    ///
    /// Only the backend's reports publish, one at a time: the entries cannot change meanwhile.
    private func publishDifference(to target: [Entry], at revision: UInt64) {
        let order = published.withLock { $0.entries.order }
        let current = Self.entries(in: order, selectedBy: [""], readable: nil)
        let changes = Change.differences(from: current, to: target, revision: revision)
        if changes.isEmpty {
            apply(.reached(revision))
        } else {
            publish([CommittedRevision(revision: revision, changes: changes, origin: .syncd("the backend read the state again"))])
        }
        // After the revision is published: the compacted revision never passes the current one.
        apply(.forgotten(through: revision))
    }

    /// Applies committed revisions, consecutive and after the current one, to the published
    /// state and sends them to the watches they concern: the one way state changes.
    ///
    /// - Parameters:
    ///   - entries: Each key the revisions change, with its entry after them (nil: deleted), when
    ///     the caller has them at hand; found from the revisions otherwise.
    ///   - timing: Run by each event loop once it has written these revisions' events.
    ///   - answering: The writes that made the revisions, with their results: their answers to
    ///     connections join the round that carries the events (see ``DeliveryRound``). Their
    ///     callbacks are left to the caller, to call without the lock.
    func publish(
        _ revisions: [CommittedRevision], entries: GroupEntries? = nil, timing: (@Sendable () -> Void)? = nil,
        answering: (writes: [PendingWrite], results: [Result<WriteOutcome, SharedStateError>])? = nil
    ) {
        var revisions = revisions
        guard let last = revisions.last else { return }
        // Made before taking the lock, which readers share.
        let stored = entries ?? Self.latestEntries(of: revisions)
        let (place, delivered) = published.withLock { state in
            if state.watches.wantsPreviousValues {
                // Before the table changes: it holds every key's entry before these revisions.
                var previous: [String: Entry?] = [:]
                for index in revisions.indices {
                    revisions[index].findPrevious(in: &previous) { key in
                        state.entries[key].map { .entry($0.entry(key: key)) } ?? .absent
                    }
                }
            }
            for written in stored.written {
                state.set(written.key, hash: written.hash, to: written.entry)
            }
            for entry in stored.replaced { state.entries.discard(entry) }
            state.revision = last.revision
            state.restoreJournal?.record(revisions)
            var round = DeliveryRound()
            round.isLive = true
            let delivered = state.watches.deliver(revisions, into: &round)
            if delivered > 0 { round.afterWriting = timing }
            if let answering { PendingWrite.answer(answering.writes, with: answering.results, in: &round, callingBack: false) }
            // Placed in line under the lock: what the engine sends leaves in its order.
            return (delivery.place(round, waiting: &state.waitingRounds), delivered)
        }
        handOver(place)
        metrics.eventsDelivered.increment(by: Int64(delivered))
    }

    /// Each key `revisions` change, with its entry after the last of them (nil: deleted).
    static func latestEntries(of revisions: [CommittedRevision]) -> GroupEntries {
        var latest = GroupEntries()
        for revision in revisions {
            if let put = revision.changes.lonePut {
                latest.set(put.key, hash: KeyIndex.hash(of: put.key), to: put.entry)
                continue
            }
            for change in revision.changes {
                latest.set(change.key, hash: KeyIndex.hash(of: change.key), to: change.type == .put ? StoredEntry.make(change.entry) : nil)
            }
        }
        return latest
    }
}
