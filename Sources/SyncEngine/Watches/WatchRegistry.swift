import NIOCore
import SharedStateWire

/// Every active watch, and the fan-out of committed revisions to them.
///
/// A value type kept inside the engine's lock, so registering a watch, taking its snapshot and
/// delivering the next revision happen in one order for everyone.
package struct WatchRegistry {
    /// One watch of one subscriber.
    struct Watch {
        /// The watch's id, chosen by the client; unique per subscriber.
        let id: UInt64
        /// The prefixes it selects; empty selects everything.
        let prefixes: [String]
        /// The keys its client may read (the access policy); nil for every key.
        let readable: KeyFilter?
        /// Whether each change it is sent carries the key's entry before it.
        var previousValues = false
        let subscriber: any WatchSubscriber
        /// Revisions up to this one are not delivered.
        var startsAfter: UInt64
        /// While the change log is being replayed to the watch, live frames wait here.
        var heldFrames: [ByteBuffer]?
        /// Changes were dropped because the subscriber was backlogged: it is owed a resync.
        var needsResync = false
        /// Whether anything was sent since the last progress notice.
        var isIdle = true
        /// Asked when the access policy changed: an error ends the watch, with that error.
        var ending: (@Sendable () -> SharedStateError?)? = nil

        func selects(_ key: String) -> Bool {
            (prefixes.isEmpty || prefixes.contains { KeyRules.key(key, hasPrefix: $0) }) && readable?(key) != false
        }
    }

    private struct WatchKey: Hashable {
        let subscriber: ObjectIdentifier
        let id: UInt64
    }

    private var watches: [WatchKey: Watch] = [:]
    /// The watches by the keys they select.
    private var index = WatchIndex<WatchKey>()
    /// The ids of each subscriber's watches.
    private var bySubscriber: [ObjectIdentifier: Set<UInt64>] = [:]
    /// How many watches ask for previous values.
    private var previousValueWatches = 0

    /// Whether a revision published now must know each change's previous entry: some watch asks
    /// for them (see ``CommittedRevision/findPrevious(in:before:)``).
    var wantsPreviousValues: Bool { previousValueWatches > 0 }

    /// The number of active watches.
    var count: Int { watches.count }

    /// The number of watches `subscriber` has.
    func count(of subscriber: any WatchSubscriber) -> Int {
        bySubscriber[ObjectIdentifier(subscriber)]?.count ?? 0
    }

    /// Whether `subscriber` has a watch with this id.
    func contains(id: UInt64, of subscriber: any WatchSubscriber) -> Bool {
        watches[WatchKey(subscriber: ObjectIdentifier(subscriber), id: id)] != nil
    }

    /// Adds a watch, in place of one of the same subscriber with the same id.
    mutating func add(_ watch: Watch) {
        let key = WatchKey(subscriber: ObjectIdentifier(watch.subscriber), id: watch.id)
        if let old = watches.updateValue(watch, forKey: key) {
            index.remove(key, prefixes: old.prefixes)
            if old.previousValues { previousValueWatches -= 1 }
        }
        if watch.previousValues { previousValueWatches += 1 }
        index.insert(key, prefixes: watch.prefixes)
        bySubscriber[key.subscriber, default: []].insert(watch.id)
    }

    /// Removes a watch; returns whether it existed.
    @discardableResult
    mutating func remove(id: UInt64, of subscriber: any WatchSubscriber) -> Bool {
        remove(WatchKey(subscriber: ObjectIdentifier(subscriber), id: id))
    }

    /// Removes every watch of `subscriber`.
    mutating func removeAll(of subscriber: any WatchSubscriber) {
        let identifier = ObjectIdentifier(subscriber)
        for id in bySubscriber[identifier] ?? [] {
            _ = remove(WatchKey(subscriber: identifier, id: id))
        }
    }

    private mutating func remove(_ key: WatchKey) -> Bool {
        guard let watch = watches.removeValue(forKey: key) else { return false }
        index.remove(key, prefixes: watch.prefixes)
        if watch.previousValues { previousValueWatches -= 1 }
        bySubscriber[key.subscriber]?.remove(key.id)
        if bySubscriber[key.subscriber]?.isEmpty == true { bySubscriber[key.subscriber] = nil }
        return true
    }

    /// Makes a watch hold its live frames until ``releaseHeldFrames(id:of:)``, while what it is
    /// owed first is made.
    mutating func holdFrames(id: UInt64, of subscriber: any WatchSubscriber) {
        let key = WatchKey(subscriber: ObjectIdentifier(subscriber), id: id)
        if watches[key]?.heldFrames == nil { watches[key]?.heldFrames = [] }
    }

    /// Ends a watch's replay: returns the frames held meanwhile and lets live frames through.
    mutating func releaseHeldFrames(id: UInt64, of subscriber: any WatchSubscriber) -> [ByteBuffer]? {
        let key = WatchKey(subscriber: ObjectIdentifier(subscriber), id: id)
        guard let held = watches[key]?.heldFrames else { return nil }
        watches[key]?.heldFrames = nil
        // The caller sends the catch-up now: the watch is not idle this round.
        watches[key]?.isIdle = false
        return held
    }

    /// Sends each watch the changes of `revisions` it selects: one frame per revision, all frames
    /// of a subscriber in one flush, all subscribers of an event loop in one hand-off. A
    /// backlogged subscriber's watches get nothing and are marked as owed a resync.
    ///
    /// Only the watches a change may concern are looked at (see ``WatchIndex``), so a write costs
    /// what its watchers cost.
    ///
    /// The hand-offs join `batch`, which the caller dispatches (with the engine's lock still
    /// held); each event loop that writes frames then runs `afterWriting` (which times the
    /// delivery).
    /// - Returns: How many frames went out (frames held for a watch that replays not counted).
    @discardableResult
    mutating func deliver(
        _ revisions: [CommittedRevision], afterWriting: (@Sendable () -> Void)?, into batch: inout DeliveryBatch
    ) -> Int {
        guard !watches.isEmpty else { return 0 }
        var outboxes: [ObjectIdentifier: (subscriber: any WatchSubscriber, frames: [ByteBuffer])] = [:]
        var backlogged: [ObjectIdentifier: Bool] = [:]
        // Watches that take a whole revision under the same id get the same bytes: clients number
        // their watches from 1, so most subscribers share a frame rather than each copying one.
        var wholeFrames: [WholeFrameKey: ByteBuffer] = [:]
        var candidates: Set<WatchKey> = []
        for revision in revisions {
            candidates.removeAll(keepingCapacity: true)
            for change in revision.changes {
                index.forEachMember(selecting: change.key) { candidates.insert($0) }
            }
            for key in index.everything {
                deliver(revision, to: key, outboxes: &outboxes, backlogged: &backlogged, wholeFrames: &wholeFrames)
            }
            for key in candidates {
                deliver(revision, to: key, outboxes: &outboxes, backlogged: &backlogged, wholeFrames: &wholeFrames)
            }
        }
        var delivered = 0
        for outbox in outboxes.values {
            outbox.subscriber.send(outbox.frames, in: &batch)
            outbox.subscriber.countDelivered(outbox.frames.count)
            delivered += outbox.frames.count
        }
        if let afterWriting { batch.addToEveryLoop(afterWriting) }
        return delivered
    }

    /// Adds the frame of the changes of `revision` that the watch `key` selects to its
    /// subscriber's outbox, or to the frames it holds while it replays; marks it owed a resync
    /// instead when its subscriber is backlogged.
    private mutating func deliver(
        _ revision: CommittedRevision,
        to key: WatchKey,
        outboxes: inout [ObjectIdentifier: (subscriber: any WatchSubscriber, frames: [ByteBuffer])],
        backlogged: inout [ObjectIdentifier: Bool],
        wholeFrames: inout [WholeFrameKey: ByteBuffer]
    ) {
        guard let watch = watches[key], !watch.needsResync, revision.revision > watch.startsAfter else { return }
        let isBacklogged = backlogged[key.subscriber] ?? watch.subscriber.isBacklogged
        backlogged[key.subscriber] = isBacklogged
        let selection = Self.selection(of: watch, in: revision)
        if case .none = selection { return }
        if isBacklogged && watch.heldFrames == nil {
            // Nothing is encoded for it: it is owed a resync.
            watches[key]!.needsResync = true
            return
        }
        let frame: ByteBuffer
        if case .whole = selection, !watch.previousValues {
            let frameKey = WholeFrameKey(revision: revision.revision, watchID: watch.id)
            frame = wholeFrames[frameKey] ?? revision.encoded.frame(forWatch: watch.id, allocator: WatchFrames.allocator)
            wholeFrames[frameKey] = frame
        } else {
            frame = Self.frame(of: selection, for: watch, revision)
        }
        watches[key]!.isIdle = false
        if watch.heldFrames != nil {
            watches[key]!.heldFrames!.append(frame)
        } else {
            outboxes[key.subscriber, default: (watch.subscriber, [])].frames.append(frame)
        }
    }

    private struct WholeFrameKey: Hashable {
        let revision: UInt64
        let watchID: UInt64
    }

    /// Which of a revision's changes a watch selects.
    private enum Selection {
        case none
        case whole
        /// Some, not all: their indices, in order.
        case some([Int])
    }

    private static func selection(of watch: Watch, in revision: CommittedRevision) -> Selection {
        if watch.prefixes.isEmpty && watch.readable == nil { return .whole }
        let indices = revision.changes.indices.filter { watch.selects(revision.changes[$0].key) }
        if indices.isEmpty { return .none }
        return indices.count == revision.changes.count ? .whole : .some(indices)
    }

    /// The frame of what `selection` (not `.none`) takes of `revision` for `watch`.
    private static func frame(of selection: Selection, for watch: Watch, _ revision: CommittedRevision) -> ByteBuffer {
        switch selection {
        case .whole where !watch.previousValues:
            // All of them: the revision's encoded event serves as it is.
            revision.encoded.frame(forWatch: watch.id, allocator: WatchFrames.allocator)
        case .some(let indices):
            WatchFrames.changes(of: revision, at: indices, withPrevious: watch.previousValues, watchID: watch.id)
        case .none, .whole:
            WatchFrames.changes(of: revision, at: nil, withPrevious: watch.previousValues, watchID: watch.id)
        }
    }

    /// Sends a progress notice at `revision` to every live watch that was sent nothing since the
    /// last round, and starts a new round.
    mutating func sendProgress(revision: UInt64) {
        var outboxes: [ObjectIdentifier: (subscriber: any WatchSubscriber, frames: [ByteBuffer])] = [:]
        for key in watches.keys {
            let watch = watches[key]!
            watches[key]!.isIdle = true
            guard watch.isIdle, watch.heldFrames == nil, !watch.needsResync, !watch.subscriber.isBacklogged else { continue }
            let frame = WatchFrames.progress(watchID: watch.id, revision: revision)
            outboxes[key.subscriber, default: (watch.subscriber, [])].frames.append(frame)
        }
        var batch = DeliveryBatch()
        for outbox in outboxes.values {
            outbox.subscriber.send(outbox.frames, in: &batch)
        }
        batch.dispatch()
    }

    /// Ends every watch whose ``Watch/ending`` check now fails (after a new access policy): it is
    /// removed, and its subscriber gets an `ENDED` event with the error. Returns how many ended.
    mutating func endWatchesThatMayNotGoOn(revision: UInt64) -> Int {
        var ended: [(key: WatchKey, watch: Watch, error: SharedStateError)] = []
        for (key, watch) in watches {
            if let error = watch.ending?() { ended.append((key, watch, error)) }
        }
        for (key, watch, error) in ended {
            _ = remove(key)
            watch.subscriber.send([WatchFrames.ended(watchID: watch.id, revision: revision, error: error)])
        }
        return ended.count
    }

    /// Takes the watches of `subscriber` that are owed a resync, clearing the debt.
    mutating func takeResyncs(of subscriber: any WatchSubscriber) -> [Watch] {
        let identifier = ObjectIdentifier(subscriber)
        var owed: [Watch] = []
        for id in bySubscriber[identifier] ?? [] {
            let key = WatchKey(subscriber: identifier, id: id)
            guard watches[key]?.needsResync == true else { continue }
            watches[key]!.needsResync = false
            owed.append(watches[key]!)
        }
        return owed.sorted { $0.id < $1.id }
    }

    /// The frame that tells `watch` about the changes of `revision` it selects, if any.
    static func eventFrame(for watch: Watch, _ revision: CommittedRevision) -> ByteBuffer? {
        let selection = selection(of: watch, in: revision)
        if case .none = selection { return nil }
        return frame(of: selection, for: watch, revision)
    }
}
