import Foundation
import SharedStateWire

/// Writes: submitted to the backend, published once it has committed them (see ``StateEngine``).
extension StateEngine {
    /// Submits a write made by `origin` (syncd itself by default); `completion` is called, on
    /// whichever thread publishes it, once it is committed and published, or has failed.
    func submit(
        _ request: WriteRequest,
        origin: WriteOrigin = .syncd(""),
        completion: @escaping @Sendable (Result<WriteOutcome, SharedStateError>) -> Void
    ) {
        let pending = WriteQueue.Pending(
            request: request, origin: origin, reply: .callback(completion),
            timedSince: metrics.samplesDelivery() ? .now : nil)
        if !backend.submit(CollectionOfOne(pending), to: self, mayCommitHere: false) {
            completion(.failure(Self.shuttingDown))
        }
    }

    /// Submits a connection's writes, in order; `target` gets their answers, those of one commit
    /// together, once they are committed and published, or have failed.
    ///
    /// - Parameter mayCommitHere: Whether the caller would rather commit on its own thread than
    ///   hand over, when nothing else is waiting: a client waiting for one write at a time saves
    ///   the two thread wake-ups of the hand-off. A client with writes in flight is better served
    ///   by the backend's writer, while the caller goes on reading.
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
        if !backend.submit(pending, to: self, mayCommitHere: mayCommitHere) {
            let batch = DeliveryBatch()
            target.receive(requests.map { WriteAnswer(requestID: $0.id, result: .failure(Self.shuttingDown)) }, in: batch)
            batch.dispatch()
        }
    }

    static let shuttingDown = SharedStateError(.unavailable, "syncd is shutting down and takes no more writes")

    /// Runs the backend until ``shutDown()``.
    func runWriter() async {
        await backend.run(publishingTo: self)
    }

    /// Stops taking writes; ``runWriter()`` returns once those already taken are answered.
    func shutDown() {
        backend.shutDown()
    }

    /// Applies committed revisions, consecutive and after the current one, to the published
    /// state and sends them to the watches they concern: the one way state changes.
    ///
    /// - Parameters:
    ///   - entries: Each key the revisions change, with its entry after them (nil: deleted), when
    ///     the caller has it at hand; found from the revisions otherwise.
    ///   - timing: Run by each event loop once it has written these revisions' events.
    func publish(_ revisions: [CommittedRevision], entries: [String: Entry?]? = nil, timing: (@Sendable () -> Void)? = nil) {
        var revisions = revisions
        guard let last = revisions.last else { return }
        let latest = entries ?? Self.latestEntries(of: revisions)
        // Made before taking the lock, which readers share.
        let stored = latest.mapValues { $0.map(StoredEntry.make) }
        published.withLock { state in
            if state.watches.wantsPreviousValues {
                // Before the table changes: it holds every key's entry before these revisions.
                var previous: [String: Entry?] = [:]
                for index in revisions.indices {
                    revisions[index].findPrevious(in: &previous) { key in
                        state.entries[key].map { .entry($0.entry(key: key)) } ?? .absent
                    }
                }
            }
            for (key, entry) in stored {
                state.set(key, to: entry)
            }
            state.revision = last.revision
            state.restoreJournal?.record(revisions)
            metrics.eventsDelivered.increment(by: Int64(state.watches.deliver(revisions, afterWriting: timing)))
        }
    }

    /// Moves the revision up to `revision` without changing an entry: for a backend whose
    /// revisions are shared with other data (etcd's, with keys outside syncd's prefix), the state
    /// at `revision` is the state at the last revision that changed it.
    func advance(to revision: UInt64) {
        published.withLock { $0.revision = max($0.revision, revision) }
    }

    /// Records that the backend no longer holds the revisions up to `revision`: new replays from
    /// before it are `compacted`.
    func historyForgotten(through revision: UInt64) {
        published.withLock { $0.compactedRevision = max($0.compactedRevision, revision) }
    }

    /// Every published entry, read from a copy of the key order taken now (O(1)), off the
    /// engine's lock.
    func allEntries() -> [Entry] {
        let order = published.withLock { $0.entries.order }
        return Self.entries(in: order, selectedBy: [""], readable: nil)
    }

    /// Each key `revisions` change, with its entry after the last of them (nil: deleted).
    static func latestEntries(of revisions: [CommittedRevision]) -> [String: Entry?] {
        var latest: [String: Entry?] = [:]
        for change in revisions.lazy.flatMap(\.changes) {
            latest.updateValue(change.type == .put ? change.entry : nil, forKey: change.key)
        }
        return latest
    }

    /// Hands each write's result to whoever waits for it: every answer for one connection in a
    /// single call, in submission order.
    static func reply(to batch: [WriteQueue.Pending], with results: [Result<WriteOutcome, SharedStateError>]) {
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
}
