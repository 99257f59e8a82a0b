import Logging
import NIOCore
import SharedStateWire
import Synchronization

/// Watches: registration under the lock with the snapshot or replay they start from, catching up
/// off the lock when that is large, cancellation, resynchronisation after a backlog, progress
/// notices. What each watch is sent is decided here; ``WatchFrames`` makes the bytes.
package extension StateEngine {
    /// Registers a watch and sends its first frames to `subscriber`: the response to the watch
    /// request, then the snapshot or the replayed changes its start asks for. Live changes follow.
    ///
    /// - Throws: As ``beginWatch(id:prefixes:start:previousValues:readable:ending:subscriber:)`` and
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
            case entries(KeyOrder, kind: WatchFrames.EntriesKind, revision: UInt64, respondsFirst: Bool)
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
        ending: (@Sendable () -> SharedStateError?)? = nil,
        subscriber: some WatchSubscriber
    ) throws(SharedStateError) -> WatchCatchUp? {
        let prefixes = prefixes.contains("") ? [] : prefixes
        let budget = configuration.entriesReadInPlace
        return try published.withLock { state throws(SharedStateError) in
            if state.watches.contains(id: id, of: subscriber) {
                throw SharedStateError(.invalidArgument, "watch id \(id) is already in use on this connection")
            }
            var watch = WatchRegistry.Watch(
                id: id,
                prefixes: prefixes,
                readable: readable,
                subscriber: subscriber,
                startsAfter: state.revision
            )
            watch.ending = ending
            watch.previousValues = previousValues
            switch start {
            case .snapshot:
                let entries = Self.entries(in: state.entries.order, selectedBy: prefixes, readable: readable, limit: budget + 1)
                guard entries.count <= budget else {
                    watch.heldFrames = []
                    state.watches.add(watch)
                    return WatchCatchUp(
                        watch: watch,
                        work: .entries(state.entries.order, kind: .snapshot, revision: state.revision, respondsFirst: true)
                    )
                }
                state.watches.add(watch)
                subscriber.send([
                    WatchFrames.response(watchID: id, revision: state.revision),
                    WatchFrames.entries(entries, kind: .snapshot, watchID: id, revision: state.revision),
                ])
                return nil
            case .now:
                state.watches.add(watch)
                subscriber.send([WatchFrames.response(watchID: id, revision: state.revision)])
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
                    subscriber.send([WatchFrames.response(watchID: id, revision: revision)])
                    return nil
                }
                watch.heldFrames = []
                state.watches.add(watch)
                let through = state.revision
                watch.startsAfter = revision
                return WatchCatchUp(watch: watch, work: .replay(through: through))
            }
        }
    }

    /// Sends a watch what ``beginWatch(id:prefixes:start:previousValues:readable:ending:subscriber:)`` or
    /// ``resync(_:)`` left to send, followed by the live changes held meanwhile.
    ///
    /// - Throws: `compacted` when compaction removed part of a replay's range meanwhile,
    ///   `unavailable` when the change log cannot be read; the watch is removed then.
    func catchUp(_ catchUp: WatchCatchUp) async throws(SharedStateError) {
        let watch = catchUp.watch
        var frames: [ByteBuffer]
        switch catchUp.work {
        case .replay(let through):
            frames = [WatchFrames.response(watchID: watch.id, revision: watch.startsAfter)]
            frames.append(contentsOf: try await replayedFrames(of: watch, through: through))
            // Caught up: a reader of history (`syncctl inspect`'s time travel) knows it has every
            // change through `through` without waiting for the next one or for a progress round.
            frames.append(WatchFrames.progress(watchID: watch.id, revision: through))
        case .entries(let order, let kind, let revision, let respondsFirst):
            frames = respondsFirst ? [WatchFrames.response(watchID: watch.id, revision: revision)] : []
            do {
                let event = try await BackgroundWork.run {
                    WatchFrames.entries(
                        Self.entries(in: order, selectedBy: watch.prefixes, readable: watch.readable),
                        kind: kind,
                        watchID: watch.id,
                        revision: revision
                    )
                }
                frames.append(event)
            } catch {
                _ = published.withLock { $0.watches.remove(id: watch.id, of: watch.subscriber) }
                throw error
            }
        }
        published.withLock { state in
            // The frames held meanwhile go out after these, under the lock, so that the next
            // delivery cannot overtake them.
            guard let held = state.watches.releaseHeldFrames(id: watch.id, of: watch.subscriber) else { return }
            watch.subscriber.send(frames + held)
        }
    }

    /// The frames of the revisions a watch missed, read back from the backend's history.
    private func replayedFrames(of watch: WatchRegistry.Watch, through: UInt64) async throws(SharedStateError) -> [ByteBuffer] {
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
        return logged.compactMap { WatchRegistry.eventFrame(for: watch, $0) }
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
        return published.withLock { state in
            guard !subscriber.isBacklogged else { return (0, []) }
            let owed = state.watches.takeResyncs(of: subscriber)
            guard !owed.isEmpty else { return (0, []) }
            var frames: [ByteBuffer] = []
            var large: [WatchCatchUp] = []
            for watch in owed {
                let entries = Self.entries(in: state.entries.order, selectedBy: watch.prefixes, readable: watch.readable, limit: budget + 1)
                if entries.count <= budget {
                    frames.append(WatchFrames.entries(entries, kind: .resync, watchID: watch.id, revision: state.revision))
                } else {
                    state.watches.holdFrames(id: watch.id, of: subscriber)
                    let work = WatchCatchUp.Work.entries(
                        state.entries.order, kind: .resync, revision: state.revision, respondsFirst: false)
                    large.append(WatchCatchUp(watch: watch, work: work))
                }
            }
            if !frames.isEmpty { subscriber.send(frames) }
            metrics.resyncs.increment(by: Int64(owed.count))
            logger.debug("resynchronised a subscriber that fell behind", metadata: ["watches": "\(owed.count)"])
            return (owed.count, large)
        }
    }

    /// How many watches `subscriber` has.
    func watchCount(of subscriber: some WatchSubscriber) -> Int {
        published.withLock { $0.watches.count(of: subscriber) }
    }

    /// Tells every idle watch the current revision.
    func sendProgressNotices() {
        published.withLock { state in
            state.watches.sendProgress(revision: state.revision)
        }
    }

    /// Ends the watches a new access policy leaves nothing to read (see
    /// ``WatchRegistry/endWatchesThatMayNotGoOn(revision:)``); returns how many.
    @discardableResult
    func endWatchesThatMayNotGoOn() -> Int {
        published.withLock { $0.watches.endWatchesThatMayNotGoOn(revision: $0.revision) }
    }
}
