import NIOCore
import SyncEngine

/// The outbound side of a connection, as the server's delivery sees it: what takes the frames
/// made of a round's messages and the answers to its writes. ``ConnectionWriter`` in syncd.
package protocol FrameReceiver: WatchSubscriber, WriteAnswerTarget {
    /// Queues frames for the peer, in order, joining `batch`.
    func send(_ frames: [ByteBuffer], in batch: inout DeliveryBatch)
    /// Queues the answers of one commit, in order, joining `batch`.
    func receive(_ answers: DeliveryRound.AnswerList, in batch: inout DeliveryBatch)
}
