import NIOCore

/// Where a watch's frames go: in syncd, one client connection.
package protocol WatchSubscriber: AnyObject, Sendable {
    /// Queues already-encoded frames for the peer, in order, and flushes them once.
    ///
    /// Called with the engine's lock held, so frames from different calls reach the peer in the
    /// order the engine produced them. It must only hand the buffers over, never block.
    func send(_ frames: [ByteBuffer])

    /// Like ``send(_:)``, with the hand-off joining `batch`, which the engine dispatches while it
    /// still holds its lock.
    func send(_ frames: [ByteBuffer], in batch: inout DeliveryBatch)

    /// Whether the peer has fallen so far behind that its outbound queue is full: the engine then
    /// stops sending it changes and, once it catches up, sends a resync snapshot instead.
    var isBacklogged: Bool { get }

    /// Counts watch events delivered to it live, for `syncctl clients` and `top`.
    func countDelivered(_ events: Int)
}

package extension WatchSubscriber {
    func countDelivered(_ events: Int) {}

    /// Hands the frames over at once, outside the batch.
    func send(_ frames: [ByteBuffer], in batch: inout DeliveryBatch) {
        send(frames)
    }
}
