import NIOCore

/// The frames of one round of delivery (a commit's changes, its answers, a progress round),
/// gathered per event loop: each loop gets one task for the round, however many of its
/// connections are sent something, instead of one task (and one wake-up) per connection.
///
/// Used by one thread at a time: filled, then ``dispatch()``ed.
package final class DeliveryBatch {
    private var loops: [ObjectIdentifier: (loop: any EventLoop, work: [@Sendable () -> Void])] = [:]

    /// Adds work to run on `loop` when the batch is dispatched, after the work added before it.
    package func add(on loop: any EventLoop, _ work: @escaping @Sendable () -> Void) {
        loops[ObjectIdentifier(loop), default: (loop, [])].work.append(work)
    }

    /// Adds work to run on every loop the batch has work for, after that work.
    func addToEveryLoop(_ work: @escaping @Sendable () -> Void) {
        for key in loops.keys { loops[key]!.work.append(work) }
    }

    /// Hands each loop its work, in one task per loop, and empties the batch.
    func dispatch() {
        for (loop, work) in loops.values {
            loop.execute {
                for item in work { item() }
            }
        }
        loops.removeAll()
    }
}
