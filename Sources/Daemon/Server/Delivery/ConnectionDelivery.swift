import NIOCore
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
