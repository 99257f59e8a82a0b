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

        /// The frame to send this watch for the changes of `revision` it selects, if any: nil
        /// when it selects none, when it holds the frame while its replay runs, or when its
        /// subscriber is backlogged (it is then owed a resync). `wholeFrames` are the frames of
        /// the whole revision already made, by watch id, which it shares or adds to.
        mutating func take(
            _ revision: CommittedRevision, subscriberIsBacklogged: Bool, sharing wholeFrames: inout [(watchID: UInt64, frame: ByteBuffer)]
        ) -> ByteBuffer? {
            guard !needsResync, revision.revision > startsAfter else { return nil }
            let selection = WatchRegistry.selection(of: self, in: revision)
            if case .none = selection { return nil }
            let isHolding = heldFrames != nil
            if subscriberIsBacklogged && !isHolding {
                // Nothing is encoded for it: it is owed a resync.
                needsResync = true
                return nil
            }
            let frame: ByteBuffer
            if case .whole = selection, !previousValues {
                if let made = wholeFrames.first(where: { $0.watchID == id }) {
                    frame = made.frame
                } else {
                    frame = revision.encoded.frame(forWatch: id, allocator: WatchFrames.allocator)
                    wholeFrames.append((id, frame))
                }
            } else {
                frame = WatchRegistry.frame(of: selection, for: self, revision)
            }
            isIdle = false
            if isHolding {
                heldFrames!.append(frame)
                return nil
            }
            return frame
        }
    }

    /// A subscriber that has watches, and what delivery noted of it in its latest round.
    private struct Subscriber {
        let subscriber: any WatchSubscriber
        /// Its watches' slots, by the watches' ids.
        var slots: [UInt64: Int] = [:]
        /// The round that last reached it, whether it was backlogged then, and its outbox there
        /// (-1 before its first frame).
        var round: UInt64 = 0
        var isBacklogged = false
        var outbox = -1
    }

    // The watches live in slots, numbered from 0 and reused, so that delivery finds a watch, its
    // subscriber and what it already did for them in a round by position, never by hashing.
    private var slots: [Watch?] = []
    /// The subscriber slot of the watch in each slot.
    private var subscriberOfSlot: [Int] = []
    /// The pass of delivery that last reached each slot, to take a watch once per revision.
    private var passOfSlot: [UInt64] = []
    private var freeSlots: [Int] = []
    private var subscribers: [Subscriber?] = []
    private var freeSubscriberSlots: [Int] = []
    private var slotOfSubscriber: [ObjectIdentifier: Int] = [:]
    /// Counts delivery's passes (one per revision); each round begins with a new one.
    private var pass: UInt64 = 0
    /// The watches' slots by the keys they select.
    private var index = WatchIndex<Int>()
    /// How many watches ask for previous values.
    private var previousValueWatches = 0
    /// The last round's lists, empty, kept for the next, so that a round of delivery neither
    /// allocates nor frees them (D38).
    private var spareRound = Round()
    private var spareCandidates: [Int] = []

    /// Whether a revision published now must know each change's previous entry: some watch asks
    /// for them (see ``CommittedRevision/findPrevious(in:before:)``).
    var wantsPreviousValues: Bool { previousValueWatches > 0 }

    /// The number of active watches.
    private(set) var count = 0

    /// The number of watches `subscriber` has.
    func count(of subscriber: any WatchSubscriber) -> Int {
        slotOfSubscriber[ObjectIdentifier(subscriber)].map { subscribers[$0]!.slots.count } ?? 0
    }

    /// Whether `subscriber` has a watch with this id.
    func contains(id: UInt64, of subscriber: any WatchSubscriber) -> Bool {
        slot(id: id, of: subscriber) != nil
    }

    /// Adds a watch, in place of one of the same subscriber with the same id.
    mutating func add(_ watch: Watch) {
        remove(id: watch.id, of: watch.subscriber)
        let identifier = ObjectIdentifier(watch.subscriber)
        let subscriberSlot: Int
        if let known = slotOfSubscriber[identifier] {
            subscriberSlot = known
        } else {
            subscriberSlot = Self.take(&freeSubscriberSlots, in: &subscribers, Subscriber(subscriber: watch.subscriber))
            slotOfSubscriber[identifier] = subscriberSlot
        }
        let slot = Self.take(&freeSlots, in: &slots, watch)
        if slot == subscriberOfSlot.count {
            subscriberOfSlot.append(subscriberSlot)
            passOfSlot.append(0)
        } else {
            subscriberOfSlot[slot] = subscriberSlot
            passOfSlot[slot] = 0
        }
        subscribers[subscriberSlot]!.slots[watch.id] = slot
        count += 1
        if watch.previousValues { previousValueWatches += 1 }
        index.insert(slot, prefixes: watch.prefixes)
    }

    /// Puts `element` in a free slot of `array`, or a new one; returns the slot.
    private static func take<Element>(_ free: inout [Int], in array: inout [Element?], _ element: Element) -> Int {
        if let slot = free.popLast() {
            array[slot] = element
            return slot
        }
        array.append(element)
        return array.count - 1
    }

    /// Removes a watch; returns whether it existed.
    @discardableResult
    mutating func remove(id: UInt64, of subscriber: any WatchSubscriber) -> Bool {
        let identifier = ObjectIdentifier(subscriber)
        guard let subscriberSlot = slotOfSubscriber[identifier],
            let slot = subscribers[subscriberSlot]!.slots.removeValue(forKey: id), let watch = slots[slot]
        else { return false }
        slots[slot] = nil
        freeSlots.append(slot)
        count -= 1
        index.remove(slot, prefixes: watch.prefixes)
        if watch.previousValues { previousValueWatches -= 1 }
        if subscribers[subscriberSlot]!.slots.isEmpty {
            subscribers[subscriberSlot] = nil
            freeSubscriberSlots.append(subscriberSlot)
            slotOfSubscriber[identifier] = nil
        }
        return true
    }

    /// Removes every watch of `subscriber`.
    mutating func removeAll(of subscriber: any WatchSubscriber) {
        guard let subscriberSlot = slotOfSubscriber[ObjectIdentifier(subscriber)] else { return }
        for id in subscribers[subscriberSlot]!.slots.keys {
            remove(id: id, of: subscriber)
        }
    }

    /// The slot of a watch, if it exists.
    private func slot(id: UInt64, of subscriber: any WatchSubscriber) -> Int? {
        slotOfSubscriber[ObjectIdentifier(subscriber)].flatMap { subscribers[$0]!.slots[id] }
    }

    /// Makes a watch hold its live frames until ``releaseHeldFrames(id:of:)``, while what it is
    /// owed first is made.
    mutating func holdFrames(id: UInt64, of subscriber: any WatchSubscriber) {
        guard let slot = slot(id: id, of: subscriber) else { return }
        if slots[slot]!.heldFrames == nil { slots[slot]!.heldFrames = [] }
    }

    /// Ends a watch's replay: returns the frames held meanwhile and lets live frames through.
    mutating func releaseHeldFrames(id: UInt64, of subscriber: any WatchSubscriber) -> [ByteBuffer]? {
        guard let slot = slot(id: id, of: subscriber), let held = slots[slot]!.heldFrames else { return nil }
        slots[slot]!.heldFrames = nil
        // The caller sends the catch-up now: the watch is not idle this round.
        slots[slot]!.isIdle = false
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
        guard count > 0 else { return 0 }
        // The lists of the last round, emptied but keeping their room: a round allocates none.
        var round = spareRound
        spareRound = Round()
        round.firstPass = pass &+ 1
        var candidates = spareCandidates
        spareCandidates = []
        // Copied (a reference): its members are read while the passes of their slots are marked.
        let index = self.index
        for revision in revisions {
            pass &+= 1
            candidates.removeAll(keepingCapacity: true)
            for change in revision.changes.indices {
                index.forEachMember(selecting: revision.changes.key(at: change)) { slot in
                    if passOfSlot[slot] != pass {
                        passOfSlot[slot] = pass
                        candidates.append(slot)
                    }
                }
            }
            if !index.everything.isEmpty { candidates.append(contentsOf: index.everything) }
            // A subscriber's watches get a revision in the order of their ids, which clients give
            // in the order they start watches: a store's list screen sees a change before the
            // detail screen opened from it. Found in that order (one watch per subscriber, say),
            // they are not sorted.
            if !isInWatchOrder(candidates) {
                candidates.sort { (slots[$0]?.id ?? 0, $0) < (slots[$1]?.id ?? 0, $1) }
            }
            round.wholeFrames.removeAll(keepingCapacity: true)
            for slot in candidates {
                deliver(revision, toSlot: slot, in: &round)
            }
        }
        var delivered = 0
        for outbox in round.outboxes {
            outbox.subscriber.send(outbox.frames, in: &batch)
            outbox.subscriber.countDelivered(outbox.frames.count)
            delivered += outbox.frames.count
        }
        if let afterWriting { batch.addToEveryLoop(afterWriting) }
        round.outboxes.removeAll(keepingCapacity: true)
        round.wholeFrames.removeAll(keepingCapacity: true)
        spareRound = round
        candidates.removeAll(keepingCapacity: true)
        spareCandidates = candidates
        return delivered
    }

    /// Whether the watches in `slots` come in the order of their ids (ties in any order).
    private func isInWatchOrder(_ watchSlots: [Int]) -> Bool {
        var previous: UInt64 = 0
        for slot in watchSlots {
            let id = slots[slot]?.id ?? 0
            if id < previous { return false }
            previous = id
        }
        return true
    }

    /// What one round of delivery gathered so far.
    private struct Round {
        /// The frames of each subscriber reached, in the order they were first reached.
        var outboxes: [(subscriber: any WatchSubscriber, frames: [ByteBuffer])] = []
        /// The round's first pass: a subscriber last reached before it was not reached yet.
        var firstPass: UInt64 = 0
        /// The frames of the whole current revision made so far, by watch id. Watches that take a
        /// whole revision under the same id get the same bytes: clients number their watches
        /// from 1, so most subscribers share a frame rather than each copying one.
        var wholeFrames: [(watchID: UInt64, frame: ByteBuffer)] = []
    }

    /// Adds the frame of the changes of `revision` that the watch in `slot` selects to its
    /// subscriber's outbox, or to the frames it holds while it replays; marks it owed a resync
    /// instead when its subscriber is backlogged.
    ///
    /// It works on the watch where it is stored (``Watch/take(_:subscriberIsBacklogged:sharing:)``,
    /// through the array's in-place access): read through `slots[slot]!` as a value, the whole
    /// watch was copied out, a retain and a release of each of its references (its subscriber,
    /// prefixes, filter, held frames) per watch and revision.
    private mutating func deliver(_ revision: CommittedRevision, toSlot slot: Int, in round: inout Round) {
        guard slots[slot] != nil else { return }
        let subscriberSlot = subscriberOfSlot[slot]
        if subscribers[subscriberSlot]!.round < round.firstPass {
            // First reached in this round: whether it is backlogged holds for the whole round.
            subscribers[subscriberSlot]!.round = pass
            subscribers[subscriberSlot]!.isBacklogged = subscribers[subscriberSlot]!.subscriber.isBacklogged
            subscribers[subscriberSlot]!.outbox = -1
        }
        guard
            let frame = slots[slot]!.take(
                revision, subscriberIsBacklogged: subscribers[subscriberSlot]!.isBacklogged, sharing: &round.wholeFrames)
        else { return }
        var outbox = subscribers[subscriberSlot]!.outbox
        if outbox < 0 {
            outbox = round.outboxes.count
            subscribers[subscriberSlot]!.outbox = outbox
            round.outboxes.append((subscribers[subscriberSlot]!.subscriber, []))
        }
        round.outboxes[outbox].frames.append(frame)
    }

    /// Which of a revision's changes a watch selects.
    fileprivate enum Selection {
        case none
        case whole
        /// Some, not all: their indices, in order.
        case some([Int])
    }

    fileprivate static func selection(of watch: borrowing Watch, in revision: CommittedRevision) -> Selection {
        if watch.prefixes.isEmpty && watch.readable == nil { return .whole }
        let changes = revision.changes
        // The usual revision, one change, and the usual watch, which takes all of a revision or
        // none of it, need no list of indices.
        guard let firstSkipped = changes.indices.first(where: { !watch.selects(changes.key(at: $0)) }) else { return .whole }
        var indices = Array(changes.indices[..<firstSkipped])
        for index in changes.indices[(firstSkipped + 1)...] where watch.selects(changes.key(at: index)) { indices.append(index) }
        return indices.isEmpty ? .none : .some(indices)
    }

    /// The frame of what `selection` (not `.none`) takes of `revision` for `watch`.
    fileprivate static func frame(of selection: Selection, for watch: borrowing Watch, _ revision: CommittedRevision) -> ByteBuffer {
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
        var outboxes: [Int: (subscriber: any WatchSubscriber, frames: [ByteBuffer])] = [:]
        for slot in slots.indices {
            guard let watch = slots[slot] else { continue }
            slots[slot]!.isIdle = true
            guard watch.isIdle, watch.heldFrames == nil, !watch.needsResync, !watch.subscriber.isBacklogged else { continue }
            let frame = WatchFrames.progress(watchID: watch.id, revision: revision)
            outboxes[subscriberOfSlot[slot], default: (watch.subscriber, [])].frames.append(frame)
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
        var ended: [(watch: Watch, error: SharedStateError)] = []
        for case let watch? in slots {
            if let error = watch.ending?() { ended.append((watch, error)) }
        }
        for (watch, error) in ended {
            remove(id: watch.id, of: watch.subscriber)
            watch.subscriber.send([WatchFrames.ended(watchID: watch.id, revision: revision, error: error)])
        }
        return ended.count
    }

    /// Takes the watches of `subscriber` that are owed a resync, clearing the debt.
    mutating func takeResyncs(of subscriber: any WatchSubscriber) -> [Watch] {
        guard let subscriberSlot = slotOfSubscriber[ObjectIdentifier(subscriber)] else { return [] }
        var owed: [Watch] = []
        for slot in subscribers[subscriberSlot]!.slots.values where slots[slot]!.needsResync {
            slots[slot]!.needsResync = false
            owed.append(slots[slot]!)
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
