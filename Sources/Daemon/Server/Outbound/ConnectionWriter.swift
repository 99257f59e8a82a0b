import NIOCore
import SharedStateWire
import SyncEngine
import Synchronization

/// The outbound side of one client connection. Frames from every source leave in the order they
/// were produced: watch events from the engine, answers from the writer, responses from the
/// connection's own handler.
///
/// What goes out when, and how, is decided by its ``OutboundState``, a value owned by the
/// connection's event loop; the writer carries out what the state decides (a hand-off to the
/// channel, a piece, a word to the handler) and keeps the one thing other threads read: how
/// many of its tasks are on their way to the loop.
///
/// It writes to the connection's socket itself (`send`, when it knows the socket's descriptor)
/// while nothing of the connection waits in NIO: what the socket does not take at once goes to
/// the channel, and later output queues behind it there until the channel has written it all.
/// A connection that keeps up never goes through NIO's outbound pipeline.
///
/// Frames from other threads (the engine's fan-out, the writer's answers) reach the event loop
/// in one task per call and are written once per call. Those of a commit made on the connection's
/// own loop are written by that loop's turn at once, when nothing for the connection is queued
/// before them (``DeliveryBatch/dispatchKeepingOwnLoop()``): a lone write is answered without a
/// task handed to the loop. Responses made on the event loop are joined, unless frames from
/// elsewhere are still on their way, and written when the handler has read everything the socket
/// had (``flush()``). Small frames written together are copied into one buffer and written as
/// one, reused while the socket takes all of it.
///
/// Output larger than ``OutboundState/pieceBytes`` at once (a list of a million keys is a frame
/// of hundreds of megabytes, a snapshot as many frames) goes out a piece at a time, the next
/// piece on a later turn of the loop once the last one is in the socket: a peer that reads as
/// fast as syncd writes would otherwise keep one `write` copying all of it, and every other
/// connection on that loop waiting. Frames made meanwhile queue behind it, in order.
///
/// Its queue is bounded by the channel's write-buffer watermarks, counting what waits to go out a
/// piece at a time: above the high mark the connection counts as backlogged (``isBacklogged``)
/// until it drains below the low mark. What it writes to the socket itself never waits, so only
/// what the socket did not take counts, as when NIO wrote it.
///
/// It tells the connection's handler what happened through the channel's pipeline, as an
/// ``Event`` (a user inbound event), never by calling it: the writer is the lower part.
package final class ConnectionWriter: FrameReceiver {
    /// What the writer tells the handler, through the pipeline, on the event loop.
    package enum Event: Equatable, Sendable {
        /// Answers went out while the handler waits for that (``isWaitingForAnswers``).
        case answersWentOut
        /// What waits to go out a piece at a time crossed a watermark: ``isWritable`` changed.
        case pacedOutputChanged
        /// Every write handed to the engine is answered, after ``notifyWhenAllAnswered()``.
        case allAnswered
    }

    private let channel: any Channel
    /// Everything else of the connection's output, decided on its event loop.
    private let state: NIOLoopBoundBox<OutboundState>
    /// Whether the connection is backlogged, for the engine to read.
    package let backlog = Backlog()
    /// Tasks handed to the event loop and not yet run: while any is, a response made on the loop
    /// joins the queue behind them instead of overtaking them. The one thing of the writer's
    /// that other threads read.
    private let inFlight = Atomic<Int>(0)

    /// A writer for `channel`, whose socket is `descriptor` (nil: everything through the channel).
    init(channel: any Channel, descriptor: Int32? = nil, watermarks: ChannelOptions.Types.WriteBufferWaterMark) {
        self.channel = channel
        // A closed connection's socket is the channel's to fail: nothing is written to it here.
        let send = descriptor.map { descriptor in
            { [channel] (bytes: UnsafeRawBufferPointer) -> Int in channel.isActive ? sendWithoutWaiting(descriptor, bytes) : 0 }
        }
        self.state = .makeBoxSendingValue(
            OutboundState(send: send, allocator: channel.allocator, watermarks: watermarks), eventLoop: channel.eventLoop)
    }

    package var isBacklogged: Bool { backlog.isBacklogged }

    /// What `clients` reports of the connection's output: the bytes queued in the channel or
    /// waiting to go out a piece at a time, not yet written to the socket; how often it fell
    /// behind and was resynchronised; how many watch events were delivered to it live; how many
    /// of its writes were refused for a schema, and the latest such violation.
    struct Report {
        var queuedBytes = 0
        var resyncs: UInt64 = 0
        var eventsDelivered: UInt64 = 0
        var schemaRefusals: UInt64 = 0
        var lastSchemaRefusal: SchemaViolation?
    }

    /// Read on the connection's event loop.
    var report: Report {
        get async {
            let (channel, state) = (self.channel, self.state)
            let report = try? await channel.eventLoop.submit {
                let inChannel = (try? channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
                let outbound = state.value
                return Report(
                    queuedBytes: inChannel + outbound.heldBytes, resyncs: outbound.resyncs, eventsDelivered: outbound.eventsDelivered,
                    schemaRefusals: outbound.schemaRefusals, lastSchemaRefusal: outbound.lastSchemaRefusal)
            }.get()
            return report ?? Report()
        }
    }

    /// Records the channel's writability; returns true when the connection just caught up.
    /// Called again with the channel's writability after ``Event/pacedOutputChanged``.
    func writabilityChanged(isWritable: Bool) -> Bool {
        let isWritable = state.value.channelWritabilityChanged(isWritable: isWritable)
        return backlog.set(!isWritable) && isWritable
    }

    // MARK: From other threads

    /// Queues frames made off the event loop; never writes synchronously.
    func send(_ frames: [ByteBuffer]) {
        channel.eventLoop.execute(countedWrite(frames))
    }

    package func send(_ frames: [ByteBuffer], in batch: inout DeliveryBatch) {
        let isFirst = inFlight.load(ordering: .acquiring) == 0
        batch.add(on: channel.eventLoop, mayGoFirst: isFirst, countedWrite(frames))
    }

    /// Queues the engine's messages for the peer, after frames made for them ahead of time,
    /// joining `batch`; their frames are `frames`' (shared with the round's other connections),
    /// taken on the loop. `live`: they are delivered live, and counted.
    func send(
        _ messages: [(watchID: UInt64, message: WatchMessage)], framedBy frames: RoundFrames, after prepared: [ByteBuffer], live: Bool,
        in batch: inout DeliveryBatch
    ) {
        let isFirst = inFlight.add(1, ordering: .acquiringAndReleasing).oldValue == 0
        batch.add(on: channel.eventLoop, mayGoFirst: isFirst) { [self] in
            update { state in
                if prepared.isEmpty {
                    Self.join(messages, framedBy: frames, to: &state)
                } else {
                    state.join(prepared + messages.map { frames.frame(of: $0.message, watchID: $0.watchID) })
                }
                state.flush()
                if live { state.countDelivered(messages.count) }
            }
            inFlight.subtract(1, ordering: .acquiringAndReleasing)
        }
    }

    package func receive(_ answers: DeliveryRound.AnswerList, in batch: inout DeliveryBatch) {
        let isFirst = inFlight.add(1, ordering: .acquiringAndReleasing).oldValue == 0
        switch answers {
        case .one(let answer):
            batch.add(on: channel.eventLoop, mayGoFirst: isFirst) { [self] in writeOut(CollectionOfOne(answer)) }
        case .many(let answers):
            batch.add(on: channel.eventLoop, mayGoFirst: isFirst) { [self] in writeOut(answers) }
        }
    }

    /// Writes the answers of a commit handed over by `receive`, in one buffer and one write.
    private func writeOut(_ answers: some Collection<WriteAnswer>) {
        update { $0.join(answers: answers) }
        inFlight.subtract(1, ordering: .acquiringAndReleasing)
    }

    // MARK: On the event loop

    /// Adds a response made on the event loop, behind anything still on its way; the handler
    /// writes it out with ``flush()``.
    func respond(_ frame: ByteBuffer) {
        channel.eventLoop.assertInEventLoop()
        if inFlight.load(ordering: .acquiring) == 0 {
            update { $0.join(frame) }
        } else {
            channel.eventLoop.execute(countedWrite([frame]))
        }
    }

    /// Writes out the responses added by ``respond(_:)``, and what else waits to be written.
    func flush() {
        update { $0.flush() }
    }

    /// How many writes handed to the engine await their answers.
    var answersOwed: Int { state.value.answersOwed }

    /// Whether the handler waits for answers to go out (it stopped reading for too many writes
    /// in flight), so that the writer tells it ``Event/answersWentOut``.
    var isWaitingForAnswers: Bool {
        get { state.value.isWaitingForAnswers }
        set { state.value.isWaitingForAnswers = newValue }
    }

    /// Counts writes answered some other way than ``receive(_:in:)`` (a restore, answered by its
    /// suspension).
    func answeredElsewhere(_ count: Int) {
        update { $0.answeredElsewhere(count) }
    }

    /// Whether the channel takes more without passing its high watermark.
    var isWritable: Bool { state.value.isWritable }

    /// Counts writes handed to the engine, whose answers ``receive(_:in:)`` will get.
    func expectAnswers(_ count: Int) {
        state.value.expectAnswers(count)
    }

    /// Tells the handler ``Event/allAnswered`` once every write handed to the engine has been
    /// answered; returns false, telling nothing, when none waits for its answer now.
    func notifyWhenAllAnswered() -> Bool {
        state.value.notifyWhenAllAnswered()
    }

    /// Counts one resynchronisation.
    func countResync() {
        state.value.countResync()
    }

    /// Writes a last frame behind everything queued, then closes the connection.
    func sendLastAndClose(_ frame: ByteBuffer) {
        let channel = self.channel
        inFlight.add(1, ordering: .acquiringAndReleasing)
        channel.eventLoop.execute { [self] in
            let written = channel.eventLoop.makePromise(of: Void.self)
            written.futureResult.whenComplete { _ in channel.close(promise: nil) }
            update { state in
                state.join(frame)
                state.flush(promise: written)
            }
            inFlight.subtract(1, ordering: .acquiringAndReleasing)
        }
    }

    /// Writes `frames` and flushes them once, counted in ``inFlight`` from now until it has run
    /// on the event loop: handed to the loop in order, it runs after every frame queued before it.
    private func countedWrite(_ frames: [ByteBuffer]) -> @Sendable () -> Void {
        inFlight.add(1, ordering: .acquiringAndReleasing)
        return { [self] in
            update { state in
                state.join(frames)
                state.flush()
            }
            inFlight.subtract(1, ordering: .acquiringAndReleasing)
        }
    }

    /// Adds the frames of `messages` to `state`, as ``OutboundState/join(_:)-([ByteBuffer])``
    /// does, taking each from `frames` without a list of them when all are whole revisions'.
    private static func join(
        _ messages: [(watchID: UInt64, message: WatchMessage)], framedBy frames: RoundFrames, to state: inout OutboundState
    ) {
        var bytes = 0
        for (watchID, message) in messages {
            guard case .changes(let index, nil, false) = message, let frame = frames.wholeFrame(index, watchID: watchID) else {
                return state.join(messages.map { frames.frame(of: $0.message, watchID: $0.watchID) })
            }
            bytes += frame.readableBytes
        }
        guard state.mayJoin(bytes: bytes) else {
            return state.join(messages.map { frames.frame(of: $0.message, watchID: $0.watchID) })
        }
        for (watchID, message) in messages {
            if case .changes(let index, nil, false) = message, let frame = frames.wholeFrame(index, watchID: watchID) { state.join(frame) }
        }
    }

    // MARK: Carrying out the state's decisions

    /// Runs `body` on the state, then carries out the effects it decided.
    private func update<Result>(_ body: (inout OutboundState) -> Result) -> Result {
        let result = body(&state.value)
        if state.value.hasActions { carryOut() }
        return result
    }

    /// Carries out the state's effects, one at a time: one may run callbacks that change the
    /// state again, and add effects behind the rest.
    private func carryOut() {
        while let action = state.value.nextAction() {
            switch action {
            case .handOff(let bytes, let promise):
                let written = channel.eventLoop.makePromise(of: Void.self)
                written.futureResult.whenComplete { [self] _ in update { $0.channelWroteHandOff() } }
                if let promise { written.futureResult.cascade(to: promise) }
                channel.writeAndFlush(bytes, promise: written)
            case .writePiece(let piece):
                guard let last = piece.last else { continue }
                for (buffer, promise) in piece.dropLast() { channel.write(buffer, promise: promise) }
                let written = channel.eventLoop.makePromise(of: Void.self)
                written.futureResult.whenComplete { [self] result in update { $0.pieceWritten(result) } }
                if let promise = last.1 { written.futureResult.cascade(to: promise) }
                channel.writeAndFlush(last.0, promise: written)
            case .writeNextPieceLater:
                channel.eventLoop.execute { [self] in update { $0.writeNextPiece() } }
            case .tell(let event):
                channel.pipeline.fireUserInboundEventTriggered(event)
            case .succeed(let promise):
                promise.succeed()
            case .fail(let promises, let error):
                for promise in promises { promise.fail(error) }
            }
        }
    }
}

package extension Limits {
    /// A connection's queue bound as NIO's watermarks: backlogged above the high one, caught up
    /// below the low one.
    var outboundWatermarks: ChannelOptions.Types.WriteBufferWaterMark {
        .init(low: maxOutboundQueueBytes / 2, high: maxOutboundQueueBytes)
    }
}
