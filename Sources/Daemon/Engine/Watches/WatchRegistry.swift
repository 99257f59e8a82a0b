import SharedStateWire
import Synchronization

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
        var readable: KeyFilter?
        /// Whether each change it is sent carries the key's entry before it.
        var previousValues = false
        let subscriber: any WatchSubscriber
        /// The subscriber's ``WatchSubscriber/backlog``, read once when the watch is made.
        let backlog: Backlog
        /// Revisions up to this one are not delivered.
        var startsAfter: UInt64
        /// While what the watch is owed first is made (a replay, a large snapshot), the live
        /// changes it selects wait here: each revision, with the indices of the changes selected
        /// (nil: all).
        var held: [(revision: CommittedRevision, selected: [Int]?)]?
        /// Changes were dropped because the subscriber was backlogged: it is owed a resync.
        var needsResync = false
        /// Whether anything was sent since the last progress notice.
        var isIdle = true

        func selects(_ key: String) -> Bool {
            (prefixes.isEmpty || prefixes.contains { KeyRules.key(key, hasPrefix: $0) }) && readable?(key) != false
        }

        /// The message to send this watch for the changes of `revision` (at `index` of its
        /// round) it selects, if any: nil when it selects none, when it holds the changes while
        /// what it is owed first is made, or when its subscriber is backlogged (it is then owed a
        /// resync).
        mutating func take(_ revision: CommittedRevision, at index: Int, subscriberIsBacklogged: Bool) -> WatchMessage? {
            guard !needsResync, revision.revision > startsAfter else { return nil }
            let selection = WatchRegistry.selection(of: self, in: revision)
            guard let selected = selection.selected else { return nil }
            if held != nil {
                held!.append((revision, selected))
                isIdle = false
                return nil
            }
            if subscriberIsBacklogged {
                // Nothing is made for it: it is owed a resync.
                needsResync = true
                return nil
            }
            isIdle = false
            return .changes(revision: index, selected: selected, withPrevious: previousValues)
        }
    }

    /// A subscriber that has watches, and what delivery noted of it in its latest round.
    private struct Subscriber {
        let subscriber: any WatchSubscriber
        let backlog: Backlog
        /// Its watches' slots, by the watches' ids.
        var slots: [UInt64: Int] = [:]
        /// The round that last reached it, whether it was backlogged then, and its outbox there
        /// (-1 before its first message).
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
    /// The last round's list of candidates, empty, kept for the next, so that a round of
    /// delivery neither allocates nor frees it (D38).
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

    /// What a client's watch is, as `clients` describes it.
    package struct Summary: Sendable {
        package var id: UInt64
        /// Empty selects every key.
        package var prefixes: [String]
        package var previousValues: Bool
        /// Still being sent what it is owed first (a replay or a snapshot).
        package var isCatchingUp: Bool
        package var owesResync: Bool
    }

    /// `subscriber`'s watches, by id.
    func summaries(of subscriber: any WatchSubscriber) -> [Summary] {
        guard let subscriberSlot = slotOfSubscriber[ObjectIdentifier(subscriber)] else { return [] }
        return subscribers[subscriberSlot]!.slots.values.map { slot in
            let watch = slots[slot]!
            return Summary(
                id: watch.id, prefixes: watch.prefixes, previousValues: watch.previousValues, isCatchingUp: watch.held != nil,
                owesResync: watch.needsResync)
        }.sorted { $0.id < $1.id }
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
            subscriberSlot = Self.take(
                &freeSubscriberSlots, in: &subscribers, Subscriber(subscriber: watch.subscriber, backlog: watch.backlog))
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

    /// Makes a watch hold its live changes until ``releaseHeld(id:of:)``, while what it is owed
    /// first is made.
    mutating func hold(id: UInt64, of subscriber: any WatchSubscriber) {
        guard let slot = slot(id: id, of: subscriber) else { return }
        if slots[slot]!.held == nil { slots[slot]!.held = [] }
    }

    /// Lets a watch's live changes through again: returns those held meanwhile.
    mutating func releaseHeld(id: UInt64, of subscriber: any WatchSubscriber) -> [(revision: CommittedRevision, selected: [Int]?)]? {
        guard let slot = slot(id: id, of: subscriber), let held = slots[slot]!.held else { return nil }
        slots[slot]!.held = nil
        // The caller sends the catch-up now: the watch is not idle this round.
        slots[slot]!.isIdle = false
        return held
    }

    /// Adds to `round` a message for each watch about the changes of `revisions` it selects: one
    /// per revision, a subscriber's messages together. A backlogged subscriber's watches get
    /// nothing and are marked as owed a resync. The revisions become the round's.
    ///
    /// Only the watches a change may concern are looked at (see ``WatchIndex``), so a write costs
    /// what its watchers cost.
    /// - Returns: How many messages it added (changes held for a watch that catches up not counted).
    @discardableResult
    mutating func deliver(_ revisions: [CommittedRevision], into round: inout DeliveryRound) -> Int {
        round.revisions = revisions
        guard count > 0 else { return 0 }
        let firstPass = pass &+ 1
        var candidates = spareCandidates
        spareCandidates = []
        // Copied (a reference): its members are read while the passes of their slots are marked.
        let index = self.index
        var delivered = 0
        for (revisionIndex, revision) in revisions.enumerated() {
            pass &+= 1
            candidates.removeAll(keepingCapacity: true)
            let changes = revision.changes
            for change in changes.indices {
                index.forEachMember(selecting: changes.key(at: change)) { slot in
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
            for slot in candidates where deliver(revision, at: revisionIndex, toSlot: slot, firstPass: firstPass, in: &round) {
                delivered += 1
            }
        }
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

    /// Adds the message about the changes of `revision` that the watch in `slot` selects to its
    /// subscriber's outbox in `round`, or to the changes it holds while it catches up; marks it
    /// owed a resync instead when its subscriber is backlogged. Returns whether it added one.
    ///
    /// It works on the watch where it is stored (``Watch/take(_:at:subscriberIsBacklogged:)``,
    /// through the array's in-place access): read through `slots[slot]!` as a value, the whole
    /// watch was copied out, a retain and a release of each of its references (its subscriber,
    /// prefixes, filter, held changes) per watch and revision.
    private mutating func deliver(
        _ revision: CommittedRevision, at revisionIndex: Int, toSlot slot: Int, firstPass: UInt64, in round: inout DeliveryRound
    ) -> Bool {
        guard slots[slot] != nil else { return false }
        let subscriberSlot = subscriberOfSlot[slot]
        if subscribers[subscriberSlot]!.round < firstPass {
            // First reached in this round: whether it is backlogged holds for the whole round.
            subscribers[subscriberSlot]!.round = pass
            subscribers[subscriberSlot]!.isBacklogged = subscribers[subscriberSlot]!.backlog.isBacklogged
            subscribers[subscriberSlot]!.outbox = -1
        }
        guard
            let message = slots[slot]!.take(
                revision, at: revisionIndex, subscriberIsBacklogged: subscribers[subscriberSlot]!.isBacklogged)
        else { return false }
        var outbox = subscribers[subscriberSlot]!.outbox
        if outbox < 0 {
            outbox = round.outboxes.count
            subscribers[subscriberSlot]!.outbox = outbox
            round.outboxes.append(DeliveryRound.Outbox(subscriber: subscribers[subscriberSlot]!.subscriber, messages: []))
        }
        round.outboxes[outbox].messages.append((slots[slot]!.id, message))
        return true
    }

    /// Which of a revision's changes a watch selects.
    fileprivate enum Selection {
        case none
        case whole
        /// Some, not all: their indices, in order.
        case some([Int])

        /// The indices a message names: nil for all of them; nil inside for none.
        var selected: [Int]?? {
            switch self {
            case .none: nil
            case .whole: .some(nil)
            case .some(let indices): .some(indices)
            }
        }
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

    /// A round with a progress notice at `revision` for every live watch that was sent nothing
    /// since the last such round, which starts a new one.
    mutating func progress(revision: UInt64) -> DeliveryRound {
        var round = DeliveryRound()
        var outboxOfSubscriber: [Int: Int] = [:]
        for slot in slots.indices {
            guard let watch = slots[slot] else { continue }
            slots[slot]!.isIdle = true
            guard watch.isIdle, watch.held == nil, !watch.needsResync, !watch.backlog.isBacklogged else { continue }
            let subscriberSlot = subscriberOfSlot[slot]
            let outbox: Int
            if let known = outboxOfSubscriber[subscriberSlot] {
                outbox = known
            } else {
                outbox = round.outboxes.count
                outboxOfSubscriber[subscriberSlot] = outbox
                round.outboxes.append(DeliveryRound.Outbox(subscriber: watch.subscriber, messages: []))
            }
            round.outboxes[outbox].messages.append((watch.id, .progress(revision: revision)))
        }
        return round
    }

    /// Makes `subscriber`'s watches show only what `readable` lets through from now on (nil:
    /// every key), after the access policy changed. A watch with a prefix under which it lets
    /// nothing through ends: it is removed, and the round returned tells the subscriber, with an
    /// error naming `who`, as a new watch of that prefix is refused. Returns how many ended.
    mutating func restrict(
        _ subscriber: any WatchSubscriber, to readable: KeyFilter?, who: String, revision: UInt64
    ) -> (ended: Int, round: DeliveryRound) {
        guard let subscriberSlot = slotOfSubscriber[ObjectIdentifier(subscriber)] else { return (0, DeliveryRound()) }
        var messages: [(watchID: UInt64, message: WatchMessage)] = []
        for (id, slot) in subscribers[subscriberSlot]!.slots.sorted(by: { $0.key < $1.key }) {
            let prefixes = slots[slot]!.prefixes
            if let readable, let denied = (prefixes.isEmpty ? [""] : prefixes).first(where: { !readable.allowsSome(under: $0) }) {
                let error = AccessDenial.error(who, AccessDenial.readingAnything(under: denied))
                messages.append((id, .ended(revision: revision, error: error)))
            } else {
                slots[slot]!.readable = readable
            }
        }
        for (id, _) in messages { remove(id: id, of: subscriber) }
        return (messages.count, DeliveryRound(messages, for: subscriber))
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

    /// The message that tells `watch` about the changes of `revision`, at `index` of its round,
    /// it selects, if any.
    static func message(for watch: Watch, _ revision: CommittedRevision, at index: Int) -> WatchMessage? {
        guard let selected = selection(of: watch, in: revision).selected else { return nil }
        return .changes(revision: index, selected: selected, withPrevious: watch.previousValues)
    }
}

/// Where a watch's messages go: in syncd, one client connection.
///
/// The engine keeps a subscriber only to tell subscribers apart and to hand it back in a
/// ``DeliveryRound``; of the subscriber itself it reads only its ``backlog``, once, before taking
/// its lock.
package protocol WatchSubscriber: AnyObject, Sendable {
    /// Whether the subscriber has fallen so far behind that its outbound queue is full: the
    /// engine then stops sending it changes and, once it catches up, sends a resync instead.
    var backlog: Backlog { get }
}

/// Whether a subscriber is backlogged: set by its owner, read by the engine under its lock.
package final class Backlog: Sendable {
    private let isSet = Atomic<Bool>(false)

    package init() {}

    /// Whether the subscriber's outbound queue is full.
    package var isBacklogged: Bool { isSet.load(ordering: .relaxed) }

    /// Records whether the subscriber is backlogged; returns whether it was.
    @discardableResult
    package func set(_ isBacklogged: Bool) -> Bool {
        isSet.exchange(isBacklogged, ordering: .relaxed)
    }
}
