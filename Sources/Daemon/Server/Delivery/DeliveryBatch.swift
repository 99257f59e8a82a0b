import NIOCore

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
