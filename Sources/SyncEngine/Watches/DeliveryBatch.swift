import NIOCore

/// The work of one round of delivery (a commit's events and answers, a progress round), gathered
/// per event loop: each loop gets one task for the round, however many of its connections are
/// sent something, instead of one task (and one wake-up) per connection.
///
/// A value, filled then ``dispatch()``ed by one thread. The usual round (one loop, one piece of
/// work) allocates nothing of its own: the first loop and its first piece are held inline.
package struct DeliveryBatch {
    /// The work for one loop, in the order it was added.
    private struct LoopWork {
        let loop: any EventLoop
        var first: @Sendable () -> Void
        var rest: [@Sendable () -> Void] = []

        func run() {
            first()
            for item in rest { item() }
        }
    }

    private var first: LoopWork?
    private var others: [LoopWork] = []

    package init() {}

    /// Whether nothing was added since the last ``dispatch()``.
    package var isEmpty: Bool { first == nil }

    /// Adds work to run on `loop` when the batch is dispatched, after the work added before it.
    package mutating func add(on loop: any EventLoop, _ work: @escaping @Sendable () -> Void) {
        guard first != nil else {
            first = LoopWork(loop: loop, first: work)
            return
        }
        if first!.loop === loop {
            first!.rest.append(work)
        } else if let index = others.firstIndex(where: { $0.loop === loop }) {
            others[index].rest.append(work)
        } else {
            others.append(LoopWork(loop: loop, first: work))
        }
    }

    /// Adds work to run on every loop the batch has work for, after that work.
    mutating func addToEveryLoop(_ work: @escaping @Sendable () -> Void) {
        first?.rest.append(work)
        for index in others.indices { others[index].rest.append(work) }
    }

    /// Hands each loop its work, in one task per loop, and empties the batch.
    package mutating func dispatch() {
        guard let first else { return }
        Self.hand(first)
        for work in others { Self.hand(work) }
        self.first = nil
        others.removeAll()
    }

    /// Hands `work` to its loop in one task; a lone piece as it is, without a closure around it.
    private static func hand(_ work: LoopWork) {
        if work.rest.isEmpty { work.loop.execute(work.first) } else { work.loop.execute { work.run() } }
    }
}
