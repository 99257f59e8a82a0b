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
        let frames = RoundFrames(revisions: round.revisions)
        for outbox in round.outboxes {
            for (watchID, message) in outbox.messages {
                if case .changes(let index, nil, false) = message { frames.makeWhole(index, watchID: watchID) }
            }
            let prepared = (outbox.prepared as? PreparedFrames)?.frames ?? []
            if let writer = outbox.subscriber as? ConnectionWriter {
                // syncd's own takes the messages with the round's frames, without a list of its own.
                writer.send(outbox.messages, framedBy: frames, after: prepared, in: &batch)
                if round.isLive { writer.countDelivered(outbox.messages.count) }
                continue
            }
            let receiver = outbox.subscriber as! any FrameReceiver
            receiver.send(prepared + outbox.messages.map { frames.frame(of: $0.message, watchID: $0.watchID) }, in: &batch)
            if round.isLive { receiver.countDelivered(outbox.messages.count) }
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
