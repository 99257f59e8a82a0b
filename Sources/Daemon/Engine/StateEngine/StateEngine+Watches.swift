import Logging
import SharedStateWire
import Synchronization

/// Watches: registration under the lock with the snapshot or replay they start from, catching up
/// off the lock when that is large, cancellation, resynchronisation after a backlog, progress
/// notices. What each watch is sent is decided here, as ``WatchMessage``s; the sink makes the
/// bytes.
package extension StateEngine {
    /// Registers a watch and sends its first messages to `subscriber`: the response to the watch
    /// request, then the snapshot or the replayed changes its start asks for. Live changes follow.
    ///
    /// - Throws: As ``beginWatch(id:prefixes:start:previousValues:readable:subscriber:)`` and
    ///   ``catchUp(_:)``.
    func startWatch(
        id: UInt64,
        prefixes: [String],
        start: WatchStart,
        previousValues: Bool = false,
        readable: KeyFilter? = nil,
        subscriber: some WatchSubscriber
    ) async throws(SharedStateError) {
        if let catchUp = try beginWatch(
            id: id, prefixes: prefixes, start: start, previousValues: previousValues, readable: readable, subscriber: subscriber)
        {
            try await self.catchUp(catchUp)
        }
    }

    /// What a watch is sent before its live changes, when it cannot be sent under the engine's
    /// lock: the revisions it missed, read back from the change log, or a snapshot or resync of
    /// more entries than ``Configuration/entriesReadInPlace``, read from a copy of the key order.
    /// The watch's live changes wait until ``catchUp(_:)`` has sent it.
    struct WatchCatchUp: Sendable {
        fileprivate enum Work: Sendable {
            case replay(through: UInt64)
            case entries(KeyOrder, kind: WatchMessage.EntriesKind, revision: UInt64, respondsFirst: Bool)
        }

        fileprivate let watch: WatchRegistry.Watch
        fileprivate let work: Work
    }

    /// Registers a watch without waiting: sends the response and the snapshot at once when the
    /// start needs no replay and the snapshot is small, and otherwise returns what remains to send
    /// with ``catchUp(_:)``, holding the watch's live changes until then. With `previousValues`,
    /// each change the watch is sent carries the key's entry before it.
    ///
    /// - Throws: `invalidArgument` when the subscriber already has a watch with this id,
    ///   `futureRevision` when the start names a revision that has not happened yet, `compacted`
    ///   when replay would start before the oldest change kept.
    func beginWatch(
        id: UInt64,
        prefixes: [String],
        start: WatchStart,
        previousValues: Bool = false,
        readable: KeyFilter? = nil,
        subscriber: some WatchSubscriber
    ) throws(SharedStateError) -> WatchCatchUp? {
        let prefixes = prefixes.contains("") ? [] : prefixes
        let budget = configuration.entriesReadInPlace
        let backlog = subscriber.backlog
        var place = DeliveryOrder.Place.nothing
        defer { handOver(place) }
        return try published.withLock { state throws(SharedStateError) in
            if state.watches.contains(id: id, of: subscriber) {
                throw SharedStateError(.invalidArgument, "watch id \(id) is already in use on this connection")
            }
            var watch = WatchRegistry.Watch(
                id: id,
                prefixes: prefixes,
                readable: readable,
                subscriber: subscriber,
                backlog: backlog,
                startsAfter: state.revision
            )
            watch.previousValues = previousValues
            switch start {
            case .snapshot:
                let entries = Self.entries(in: state.entries.order, selectedBy: prefixes, readable: readable, limit: budget + 1)
                guard entries.count <= budget else {
                    watch.held = []
                    state.watches.add(watch)
                    return WatchCatchUp(
                        watch: watch,
                        work: .entries(state.entries.order, kind: .snapshot, revision: state.revision, respondsFirst: true)
                    )
                }
                state.watches.add(watch)
                let round = DeliveryRound(
                    [(id, .started(revision: state.revision)), (id, .entries(entries, .snapshot, revision: state.revision))],
                    for: subscriber)
                place = delivery.place(round, waiting: &state.waitingRounds)
                return nil
            case .now:
                state.watches.add(watch)
                place = delivery.place(
                    DeliveryRound([(id, .started(revision: state.revision))], for: subscriber), waiting: &state.waitingRounds)
                return nil
            case .after(let revision):
                if revision < state.compactedRevision {
                    throw SharedStateError(
                        .compacted,
                        "revision \(revision) is compacted; the change log starts after revision \(state.compactedRevision)"
                    )
                }
                if revision > state.revision {
                    // Revisions are never reused: see RequestRules.revisionAhead.
                    throw RequestRules.revisionAhead(revision, current: state.revision)
                }
                if revision == state.revision {
                    state.watches.add(watch)
                    place = delivery.place(
                        DeliveryRound([(id, .started(revision: revision))], for: subscriber), waiting: &state.waitingRounds)
                    return nil
                }
                watch.held = []
                state.watches.add(watch)
                let through = state.revision
                watch.startsAfter = revision
                return WatchCatchUp(watch: watch, work: .replay(through: through))
            }
        }
    }

    /// Sends a watch what ``beginWatch(id:prefixes:start:previousValues:readable:subscriber:)`` or
    /// ``resync(_:)`` left to send, followed by the live changes held meanwhile.
    ///
    /// - Throws: `compacted` when compaction removed part of a replay's range meanwhile,
    ///   `unavailable` when the change log cannot be read; the watch is removed then.
    func catchUp(_ catchUp: WatchCatchUp) async throws(SharedStateError) {
        let watch = catchUp.watch
        let sink = delivery.sink
        // Encoded here, off every lock: a replay of many revisions or a snapshot of a million
        // entries takes a while.
        let prepared: any PreparedOutput
        switch catchUp.work {
        case .replay(let through):
            var messages: [(watchID: UInt64, message: WatchMessage)] = [(watch.id, .started(revision: watch.startsAfter))]
            let revisions = try await replayed(to: watch, through: through)
            for index in revisions.indices {
                if let message = WatchRegistry.message(for: watch, revisions[index], at: index) { messages.append((watch.id, message)) }
            }
            // Caught up: a reader of history (`syncctl inspect`'s time travel) knows it has every
            // change through `through` without waiting for the next one or for a progress round.
            messages.append((watch.id, .progress(revision: through)))
            prepared = sink.prepare(messages, revisions: revisions)
        case .entries(let order, let kind, let revision, let respondsFirst):
            do {
                prepared = try await BackgroundWork.run {
                    let entries = Self.entries(in: order, selectedBy: watch.prefixes, readable: watch.readable)
                    var messages: [(watchID: UInt64, message: WatchMessage)] =
                        respondsFirst ? [(watch.id, .started(revision: revision))] : []
                    messages.append((watch.id, .entries(entries, kind, revision: revision)))
                    return sink.prepare(messages, revisions: [])
                }
            } catch {
                _ = published.withLock { $0.watches.remove(id: watch.id, of: watch.subscriber) }
                throw error
            }
        }
        let place = published.withLock { state in
            // The changes held meanwhile go out after these, in the same round, so that the next
            // delivery cannot overtake them.
            guard let held = state.watches.releaseHeld(id: watch.id, of: watch.subscriber) else { return DeliveryOrder.Place.nothing }
            var messages: [(watchID: UInt64, message: WatchMessage)] = []
            var revisions: [CommittedRevision] = []
            for (revision, selected) in held {
                messages.append((watch.id, .changes(revision: revisions.count, selected: selected, withPrevious: watch.previousValues)))
                revisions.append(revision)
            }
            let round = DeliveryRound(prepared: prepared, then: messages, for: watch.subscriber, revisions: revisions)
            return delivery.place(round, waiting: &state.waitingRounds)
        }
        handOver(place)
    }

    /// The revisions a watch missed, read back from the backend's history, with their previous
    /// entries when it asks for them.
    private func replayed(to watch: WatchRegistry.Watch, through: UInt64) async throws(SharedStateError) -> [CommittedRevision] {
        var logged: [CommittedRevision]
        do {
            logged = try await backend.changes(after: watch.startsAfter, through: through)
        } catch {
            _ = published.withLock { $0.watches.remove(id: watch.id, of: watch.subscriber) }
            throw error
        }
        if watch.previousValues {
            do {
                try await findPrevious(of: &logged, after: watch.startsAfter)
            } catch {
                _ = published.withLock { $0.watches.remove(id: watch.id, of: watch.subscriber) }
                throw error
            }
        }
        return logged
    }

    /// Finds the previous entry of every change of `logged`, the revisions after `revision` in
    /// order: from the revisions before it in `logged`, else from the change log up to `revision`.
    /// A key the log does not show before is absent if the change created it (a put of version
    /// 1), and unknown otherwise: its entry then was compacted.
    private func findPrevious(of logged: inout [CommittedRevision], after revision: UInt64) async throws(SharedStateError) {
        var firstChanges: [String: Change] = [:]
        for change in logged.lazy.flatMap(\.changes) where firstChanges[change.key] == nil {
            firstChanges[change.key] = change
        }
        let wanted = Set(firstChanges.lazy.filter { !($0.value.type == .put && $0.value.entry.version == 1) }.map(\.key))
        let current = published.withLock { state in
            Dictionary(uniqueKeysWithValues: wanted.map { key in (key, state.entries[key]?.entry(key: key)) })
        }
        let before = try await backend.entries(of: wanted, at: revision, current: current)
        var latest: [String: Entry?] = [:]
        for index in logged.indices {
            logged[index].findPrevious(in: &latest) { key in
                if let entry = before[key] { return entry.map(Change.Previous.entry) ?? .absent }
                return wanted.contains(key) ? .unknown : .absent
            }
        }
    }

    /// Ends a watch; returns whether it existed.
    func cancelWatch(id: UInt64, of subscriber: some WatchSubscriber) -> Bool {
        published.withLock { $0.watches.remove(id: id, of: subscriber) }
    }

    /// Ends every watch of a subscriber that went away.
    func removeWatches(of subscriber: some WatchSubscriber) {
        published.withLock { $0.watches.removeAll(of: subscriber) }
    }

    /// Sends a resync to each of `subscriber`'s watches that missed changes while it was
    /// backlogged; called when its outbound queue has drained.
    ///
    /// - Returns: How many watches were resynchronised, and the resyncs too large to send under
    ///   the lock: run each with ``catchUp(_:)``; their watches hold live changes until then.
    func resync(_ subscriber: some WatchSubscriber) -> (count: Int, large: [WatchCatchUp]) {
        let budget = configuration.entriesReadInPlace
        guard !subscriber.backlog.isBacklogged else { return (0, []) }
        var place = DeliveryOrder.Place.nothing
        let resynced = published.withLock { state in
            let owed = state.watches.takeResyncs(of: subscriber)
            guard !owed.isEmpty else { return (0, [WatchCatchUp]()) }
            var messages: [(watchID: UInt64, message: WatchMessage)] = []
            var large: [WatchCatchUp] = []
            for watch in owed {
                let entries = Self.entries(in: state.entries.order, selectedBy: watch.prefixes, readable: watch.readable, limit: budget + 1)
                if entries.count <= budget {
                    messages.append((watch.id, .entries(entries, .resync, revision: state.revision)))
                } else {
                    state.watches.hold(id: watch.id, of: subscriber)
                    let work = WatchCatchUp.Work.entries(
                        state.entries.order, kind: .resync, revision: state.revision, respondsFirst: false)
                    large.append(WatchCatchUp(watch: watch, work: work))
                }
            }
            place = delivery.place(DeliveryRound(messages, for: subscriber), waiting: &state.waitingRounds)
            return (owed.count, large)
        }
        handOver(place)
        if resynced.0 > 0 {
            metrics.resyncs.increment(by: Int64(resynced.0))
            logger.debug("resynchronised a subscriber that fell behind", metadata: ["watches": "\(resynced.0)"])
        }
        return resynced
    }

    /// How many watches `subscriber` has.
    func watchCount(of subscriber: some WatchSubscriber) -> Int {
        published.withLock { $0.watches.count(of: subscriber) }
    }

    /// `subscriber`'s watches, by id.
    func watches(of subscriber: some WatchSubscriber) -> [WatchRegistry.Summary] {
        published.withLock { $0.watches.summaries(of: subscriber) }
    }

    /// Tells every idle watch the current revision.
    func sendProgressNotices() {
        handOver(
            published.withLock { state in
                delivery.place(state.watches.progress(revision: state.revision), waiting: &state.waitingRounds)
            })
    }

    /// Makes `subscriber`'s watches show only what `readable` lets through from now on (nil:
    /// every key), after the access policy changed; ends those with a prefix it leaves nothing to
    /// read under, with an error naming `who` (see ``WatchRegistry/restrict(_:to:who:revision:)``).
    /// Returns how many ended.
    @discardableResult
    func restrictWatches(of subscriber: some WatchSubscriber, to readable: KeyFilter?, who: String) -> Int {
        let (ended, place) = published.withLock { state in
            let (ended, round) = state.watches.restrict(subscriber, to: readable, who: who, revision: state.revision)
            return (ended, delivery.place(round, waiting: &state.waitingRounds))
        }
        handOver(place)
        return ended
    }
}
