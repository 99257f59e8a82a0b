import NIOCore
import SharedStateWire
import SyncEngine

/// The engine's sink in syncd: makes the frames of each round's messages and hands them, with
/// the round's answers, to the connections' event loops, in one task per loop per round
/// (``DeliveryBatch``).
///
/// A round made on an event loop's own thread leaves the work for that loop that nothing queued
/// there has to precede to the engine, which runs it on that thread once it holds no lock: a lone
/// write is answered in the loop turn that commits it.
package struct ConnectionDelivery: DeliverySink {
    package init() {}

    package func deliver(_ round: DeliveryRound) -> (@Sendable () -> Void)? {
        var batch = DeliveryBatch()
        let frames = RoundFrames(revisions: round.revisions)
        for outbox in round.outboxes {
            for (watchID, message) in outbox.messages {
                if case .changes(let index, nil, false) = message { frames.makeWhole(index, watchID: watchID) }
            }
            let prepared = (outbox.prepared as? PreparedFrames)?.frames ?? []
            if let writer = outbox.subscriber as? ConnectionWriter {
                // syncd's own takes the messages with the round's frames, without a list of its own.
                writer.send(outbox.messages, framedBy: frames, after: prepared, live: round.isLive, in: &batch)
                continue
            }
            let receiver = outbox.subscriber as! any FrameReceiver
            receiver.send(prepared + outbox.messages.map { frames.frame(of: $0.message, watchID: $0.watchID) }, in: &batch)
        }
        if let afterWriting = round.afterWriting { batch.addToEveryLoop(afterWriting) }
        if let first = round.firstAnswers {
            Self.receiver(first.target).receive(first.answers, in: &batch)
            for answers in round.otherAnswers {
                Self.receiver(answers.target).receive(answers.answers, in: &batch)
            }
        }
        return batch.dispatchKeepingOwnLoop().work
    }

    package func prepare(_ messages: [(watchID: UInt64, message: WatchMessage)], revisions: [CommittedRevision]) -> any PreparedOutput {
        PreparedFrames(frames: messages.map { WatchFrames.frame(of: $0.message, watchID: $0.watchID, revisions: revisions) })
    }

    /// The connection behind a target: syncd's own first, without a search for the conformance.
    private static func receiver(_ target: any WriteAnswerTarget) -> any FrameReceiver {
        if let writer = target as? ConnectionWriter { return writer }
        return target as! any FrameReceiver
    }
}

/// Frames made ahead of time (``ConnectionDelivery/prepare(_:revisions:)``).
struct PreparedFrames: PreparedOutput {
    let frames: [ByteBuffer]
}

/// The work of one round of delivery (a commit's events and answers, a progress round), gathered
/// per event loop: each loop gets one task for the round, however many of its connections are
/// sent something, instead of one task (and one wake-up) per connection.
///
/// A value, filled then ``dispatch()``ed by one thread. The usual round (one loop, one piece of
/// work) allocates nothing of its own: the first loop and its first piece are held inline.
///
/// A round made on an event loop's own thread (a commit on the loop that read its writes) need
/// not wait for that loop's next turn: ``dispatchKeepingOwnLoop()`` leaves the caller the work
/// for its own loop that nothing queued there has to precede (``add(on:mayGoFirst:_:)``), to run
/// once it has released its lock. A lone write is then answered in the loop turn that commits
/// it, without a task handed to the loop and taken back.
package struct DeliveryBatch {
    /// One piece of work, and where it may go among its loop's other work.
    private struct Item {
        enum Place {
            /// In order with the loop's other work, behind what the loop has queued.
            case inOrder
            /// Before what the loop has queued: it writes nowhere that queued work writes to.
            case mayGoFirst
            /// After the rest of its loop's work of the round, wherever that goes.
            case last
        }

        let work: @Sendable () -> Void
        let place: Place
    }

    /// The work for one loop, in the order it was added.
    private struct LoopWork {
        let loop: any EventLoop
        var first: Item
        var rest: [Item] = []

        func run() {
            first.work()
            for item in rest { item.work() }
        }

        /// Hands the loop this work in one task; a lone piece as it is, without a closure around it.
        func hand() {
            if rest.isEmpty { loop.execute(first.work) } else { loop.execute { run() } }
        }

        /// This work split in two: what may run at once on the loop's own thread, and what must
        /// queue behind the loop's tasks. A piece that may go first stays ahead of the queued
        /// pieces after it; one that goes last joins the queued part, if there is one.
        func split() -> (atOnce: LoopWork?, queued: LoopWork?) {
            var atOnce: LoopWork?
            var queued: LoopWork?
            var last: [Item] = []
            func place(_ item: Item) {
                switch item.place {
                case .mayGoFirst: Self.append(item, to: &atOnce, loop: loop)
                case .inOrder: Self.append(item, to: &queued, loop: loop)
                case .last: last.append(item)
                }
            }
            place(first)
            for item in rest { place(item) }
            for item in last {
                if queued != nil { Self.append(item, to: &queued, loop: loop) } else { Self.append(item, to: &atOnce, loop: loop) }
            }
            return (atOnce, queued)
        }

        private static func append(_ item: Item, to work: inout LoopWork?, loop: any EventLoop) {
            if work == nil { work = LoopWork(loop: loop, first: item) } else { work!.rest.append(item) }
        }
    }

    /// The work a round left to the thread that dispatched it, for its own event loop: run it
    /// with ``run()`` once no lock is held, before that thread does anything else.
    package struct OwnLoopWork: Sendable {
        package fileprivate(set) var work: (@Sendable () -> Void)?

        /// Runs the work, if there is any.
        package func run() { work?() }
    }

    private var first: LoopWork?
    private var others: [LoopWork] = []

    package init() {}

    /// Whether nothing was added since the last ``dispatch()``.
    package var isEmpty: Bool { first == nil }

    /// Adds work to run on `loop` when the batch is dispatched, after the work added before it.
    ///
    /// - Parameter mayGoFirst: Whether nothing queued on `loop` writes where this work writes
    ///   (the connection's queue of tasks not yet run is empty), so that it may run before them.
    package mutating func add(on loop: any EventLoop, mayGoFirst: Bool = false, _ work: @escaping @Sendable () -> Void) {
        add(Item(work: work, place: mayGoFirst ? .mayGoFirst : .inOrder), on: loop)
    }

    private mutating func add(_ item: Item, on loop: any EventLoop) {
        guard first != nil else {
            first = LoopWork(loop: loop, first: item)
            return
        }
        if first!.loop === loop {
            first!.rest.append(item)
        } else if let index = others.firstIndex(where: { $0.loop === loop }) {
            others[index].rest.append(item)
        } else {
            others.append(LoopWork(loop: loop, first: item))
        }
    }

    /// Adds work to run on every loop the batch has work for, after that work.
    package mutating func addToEveryLoop(_ work: @escaping @Sendable () -> Void) {
        let item = Item(work: work, place: .last)
        first?.rest.append(item)
        for index in others.indices { others[index].rest.append(item) }
    }

    /// Hands each loop its work, in one task per loop, and empties the batch.
    package mutating func dispatch() {
        guard let first else { return }
        first.hand()
        for work in others { work.hand() }
        self.first = nil
        others.removeAll()
    }

    /// Like ``dispatch()``, except for the work for the event loop the calling thread runs that
    /// may go before that loop's queued tasks: returned instead, for the caller to run once it
    /// has released the lock it dispatches under.
    package mutating func dispatchKeepingOwnLoop() -> OwnLoopWork {
        guard let first else { return OwnLoopWork() }
        var kept = OwnLoopWork()
        func hand(_ work: LoopWork) {
            guard work.loop.inEventLoop else { return work.hand() }
            let (atOnce, queued) = work.split()
            queued?.hand()
            if let atOnce { kept.work = atOnce.rest.isEmpty ? atOnce.first.work : { atOnce.run() } }
        }
        hand(first)
        for work in others { hand(work) }
        self.first = nil
        others.removeAll()
        return kept
    }
}

/// The frames a watch is sent, made from the engine's ``WatchMessage``s.
///
/// The engine decides what each watch is sent and when (in one order, so that nothing overtakes
/// a snapshot or a replay); this is where those decisions become protocol bytes.
package enum WatchFrames {
    /// The frame of `message` for watch `watchID`; a message about changes names a revision of
    /// `revisions` (its round's).
    static func frame(of message: WatchMessage, watchID: UInt64, revisions: [CommittedRevision]) -> ByteBuffer {
        switch message {
        case .started(let revision):
            response(watchID: watchID, revision: revision)
        case .entries(let entries, let kind, let revision):
            self.entries(entries, kind: kind, watchID: watchID, revision: revision)
        case .changes(let index, nil, false):
            // All of them: the revision's encoded event serves as it is.
            revisions[index].frame(forWatch: watchID, allocator: allocator)
        case .changes(let index, let selected, let withPrevious):
            changes(of: revisions[index], at: selected, withPrevious: withPrevious, watchID: watchID)
        case .progress(let revision):
            progress(watchID: watchID, revision: revision)
        case .ended(let revision, let error):
            ended(watchID: watchID, revision: revision, error: error)
        }
    }

    /// The response to a watch request: the watch starts after `revision`.
    static func response(watchID: UInt64, revision: UInt64) -> ByteBuffer {
        Frame.encode(
            Sharedstate_V1_ServerFrame.with {
                $0.response = .with {
                    $0.id = watchID
                    $0.watch = .with {
                        $0.watchID = watchID
                        $0.revision = revision
                    }
                }
            }
        )
    }

    /// A snapshot or resync: `entries` as puts at `revision`.
    static func entries(_ entries: [Entry], kind: WatchMessage.EntriesKind, watchID: UInt64, revision: UInt64) -> ByteBuffer {
        event(
            watchID: watchID,
            kind: kind == .snapshot ? .snapshot : .resync,
            revision: revision,
            changes: entries.map { Change.put($0).wireValue }
        )
    }

    /// The changes of `revision` at `indices` (all with nil), each with the key's entry before it
    /// when `withPrevious` (``CommittedRevision/previous``; unknown when the revision was published
    /// without them). A watch that takes all of the changes without previous entries is sent
    /// ``CommittedRevision/frame(forWatch:allocator:)`` instead, which encodes nothing again.
    static func changes(of revision: CommittedRevision, at indices: [Int]?, withPrevious: Bool, watchID: UInt64) -> ByteBuffer {
        let changes = (indices ?? Array(revision.changes.indices)).map { index in
            var change = revision.changes[index].wireValue
            if withPrevious { (revision.previous?[index] ?? .unknown).wireFields(into: &change) }
            return change
        }
        return Frame.encode(
            Sharedstate_V1_ServerFrame.with {
                $0.event = .with {
                    $0.watchID = watchID
                    $0.kind = .changes
                    $0.revision = revision.revision
                    $0.changes = changes
                    $0.writerSession = revision.writerSession
                    $0.cause = revision.cause
                }
            }
        )
    }

    /// A progress notice: the watch is current with `revision`.
    static func progress(watchID: UInt64, revision: UInt64) -> ByteBuffer {
        event(watchID: watchID, kind: .progress, revision: revision, changes: [])
    }

    /// The end of a watch that may not go on, with the reason.
    static func ended(watchID: UInt64, revision: UInt64, error: SharedStateError) -> ByteBuffer {
        Frame.encode(
            Sharedstate_V1_ServerFrame.with {
                $0.event = .with {
                    $0.watchID = watchID
                    $0.kind = .ended
                    $0.revision = revision
                    $0.error = error.wireValue
                }
            }
        )
    }

    private static func event(
        watchID: UInt64,
        kind: Sharedstate_V1_EventKind,
        revision: UInt64,
        changes: [Sharedstate_V1_Change]
    ) -> ByteBuffer {
        Frame.encode(
            Sharedstate_V1_ServerFrame.with {
                $0.event = .with {
                    $0.watchID = watchID
                    $0.kind = kind
                    $0.revision = revision
                    $0.changes = changes
                }
            }
        )
    }

    /// The allocator of the frames built for every watcher of a revision.
    static let allocator = ByteBufferAllocator()
}

package extension CommittedRevision {
    /// The frame telling watch `watchID` about every change of this revision, built from its
    /// encoded record (``logRecord``) without encoding it again (``WatchEventFrame``).
    func frame(forWatch watchID: UInt64, allocator: ByteBufferAllocator) -> ByteBuffer {
        WatchEventFrame.frame(watchID: watchID, record: logRecord, allocator: allocator)
    }
}

/// The frames of one round's whole revisions, made once by the sink and shared by every
/// connection whose watch takes one under the same id: clients number their watches from 1, so
/// most connections share a frame rather than each copying one. Filled before the round's
/// batch is dispatched, only read after (hence `@unchecked Sendable`).
final class RoundFrames: @unchecked Sendable {
    let revisions: [CommittedRevision]
    /// Each revision's first whole frame, by the revision's index; any other in ``others``.
    private var whole: [(watchID: UInt64, frame: ByteBuffer)?] = []
    private var others: [(revision: Int, watchID: UInt64, frame: ByteBuffer)] = []

    init(revisions: [CommittedRevision]) {
        self.revisions = revisions
    }

    /// Makes the frame of all of revision `index`'s changes for watch `watchID`, unless made.
    func makeWhole(_ index: Int, watchID: UInt64) {
        if whole.isEmpty { whole = Array(repeating: nil, count: revisions.count) }
        if let first = whole[index] {
            guard first.watchID != watchID, !others.contains(where: { $0.revision == index && $0.watchID == watchID }) else { return }
            others.append((index, watchID, revisions[index].frame(forWatch: watchID, allocator: WatchFrames.allocator)))
        } else {
            whole[index] = (watchID, revisions[index].frame(forWatch: watchID, allocator: WatchFrames.allocator))
        }
    }

    /// The frame made for a whole revision, if ``makeWhole(_:watchID:)`` made it.
    func wholeFrame(_ index: Int, watchID: UInt64) -> ByteBuffer? {
        guard index < whole.count else { return nil }
        if let first = whole[index], first.watchID == watchID { return first.frame }
        return others.first(where: { $0.revision == index && $0.watchID == watchID })?.frame
    }

    /// The frame of `message` for watch `watchID`: a whole revision's shared one, any other made
    /// now.
    func frame(of message: WatchMessage, watchID: UInt64) -> ByteBuffer {
        if case .changes(let index, nil, false) = message, let made = wholeFrame(index, watchID: watchID) { return made }
        return WatchFrames.frame(of: message, watchID: watchID, revisions: revisions)
    }
}
