import NIOCore
import SyncEngine

/// The outbound side of a connection, as the server's delivery sees it: what takes the frames
/// made of a round's messages and the answers to its writes. ``ConnectionWriter`` in syncd.
package protocol FrameReceiver: WatchSubscriber, WriteAnswerTarget {
    /// Queues frames for the peer, in order, joining `batch`.
    func send(_ frames: [ByteBuffer], in batch: inout DeliveryBatch)
    /// Queues the answers of one commit, in order, joining `batch`.
    func receive(_ answers: DeliveryRound.AnswerList, in batch: inout DeliveryBatch)
    /// Counts watch events delivered to it live, for `syncctl clients` and `top`.
    func countDelivered(_ events: Int)
}

package extension FrameReceiver {
    func countDelivered(_ events: Int) {}
}

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
        // Watches that take a whole revision under the same id get the same bytes: clients number
        // their watches from 1, so most subscribers share a frame rather than each copying one.
        // Each revision's first such frame is found by its index, any other by a search.
        var wholeFrames: [(watchID: UInt64, frame: ByteBuffer)?] = []
        var otherWholeFrames: [(revision: Int, watchID: UInt64, frame: ByteBuffer)] = []
        for outbox in round.outboxes {
            var frames = (outbox.prepared as? PreparedFrames)?.frames ?? []
            frames.reserveCapacity(frames.count + outbox.messages.count)
            for (watchID, message) in outbox.messages {
                guard case .changes(let index, nil, false) = message else {
                    frames.append(WatchFrames.frame(of: message, watchID: watchID, revisions: round.revisions))
                    continue
                }
                if wholeFrames.isEmpty { wholeFrames = Array(repeating: nil, count: round.revisions.count) }
                if let first = wholeFrames[index], first.watchID == watchID {
                    frames.append(first.frame)
                } else if let made = otherWholeFrames.first(where: { $0.revision == index && $0.watchID == watchID }) {
                    frames.append(made.frame)
                } else {
                    let frame = round.revisions[index].frame(forWatch: watchID, allocator: WatchFrames.allocator)
                    if wholeFrames[index] == nil {
                        wholeFrames[index] = (watchID, frame)
                    } else {
                        otherWholeFrames.append((index, watchID, frame))
                    }
                    frames.append(frame)
                }
            }
            let receiver = Self.receiver(outbox.subscriber)
            receiver.send(frames, in: &batch)
            if round.isLive { receiver.countDelivered(frames.count) }
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

    /// The connection behind a subscriber or target: syncd's own first, without a search for
    /// the conformance.
    private static func receiver(_ subscriber: any WatchSubscriber) -> any FrameReceiver {
        if let writer = subscriber as? ConnectionWriter { return writer }
        return subscriber as! any FrameReceiver
    }

    private static func receiver(_ target: any WriteAnswerTarget) -> any FrameReceiver {
        if let writer = target as? ConnectionWriter { return writer }
        return target as! any FrameReceiver
    }
}

/// Frames made ahead of time (``ConnectionDelivery/prepare(_:revisions:)``).
struct PreparedFrames: PreparedOutput {
    let frames: [ByteBuffer]
}
