import NIOCore
import SharedStateWire
import SyncEngine
import Synchronization

/// The outbound side of one client connection. Frames from every source leave in the order they
/// were produced: watch events from the engine, answers from the writer, responses from the
/// connection's own handler.
///
/// Frames from other threads (the engine's fan-out, the writer's answers) reach the event loop
/// in one task per call and are flushed once per call. Those of a commit made on the connection's
/// own loop are written by that loop's turn at once, when nothing for the connection is queued
/// before them (``DeliveryBatch/dispatchKeepingOwnLoop()``): a lone write is answered without a
/// task handed to the loop. Responses made on the event loop are
/// written at once, unless frames from elsewhere are still on their way, and flushed when the
/// handler has read everything the socket had.
///
/// Output larger than ``pieceBytes`` at once (a list of a million keys is a frame of hundreds of
/// megabytes, a snapshot as many frames) goes out a piece at a time, the next piece on a later
/// turn of the loop once the last one is in the socket: a peer that reads as fast as syncd writes
/// would otherwise keep one `write` copying all of it, and every other connection on that loop
/// waiting. Frames made meanwhile queue behind it, in order.
///
/// Its queue is bounded by the channel's write-buffer watermarks, counting what waits to go out a
/// piece at a time: above the high mark the connection counts as backlogged (``isBacklogged``)
/// until it drains below the low mark.
///
/// It tells the connection's handler what happened through the channel's pipeline, as an
/// ``Event`` (a user inbound event), never by calling it: the writer is the lower part.
package final class ConnectionWriter: WatchSubscriber, WriteAnswerTarget {
    /// What the writer tells the handler, through the pipeline, on the event loop.
    package enum Event: Equatable, Sendable {
        /// Answers went out while the handler waits for that (``isWaitingForAnswers``).
        case answersWentOut
        /// What waits to go out a piece at a time crossed a watermark: ``isWritable`` changed.
        case pacedOutputChanged
        /// Every write handed to the engine is answered, after ``notifyWhenAllAnswered()``.
        case allAnswered
    }

    /// The most one connection hands the socket in one turn of its event loop.
    static let pieceBytes = 256 * 1024

    /// Frames handed over together that take at most this many bytes are copied into one buffer
    /// and written as one: a commit's events for a watcher are many small frames, and the
    /// channel's pipeline costs more per write than copying a few hundred bytes.
    static let joinedBytes = 16 * 1024

    private let channel: any Channel
    private let watermarks: ChannelOptions.Types.WriteBufferWaterMark
    private let backlogged = Atomic<Bool>(false)
    private let channelIsWritable = Atomic<Bool>(true)
    /// Whether what waits to go out a piece at a time passed the high watermark (and has not yet
    /// drained below the low one).
    private let pacedIsOver = Atomic<Bool>(false)
    private let paced: NIOLoopBoundBox<PacedOutput>
    private let resyncCount = Atomic<UInt64>(0)
    private let deliveredCount = Atomic<UInt64>(0)
    /// Tasks handed to the event loop and not yet run: while any is, a response made on the loop
    /// joins the queue behind them instead of overtaking them.
    private let inFlight = Atomic<Int>(0)
    /// Writes handed to the engine and not yet answered.
    private let owed = Atomic<Int>(0)
    /// Whether the handler waits for ``Event/allAnswered`` (at shutdown).
    private let waitsUntilAllAnswered = Atomic<Bool>(false)
    /// Whether the handler waits for ``Event/answersWentOut`` (it stopped reading until they do).
    private let waitsForAnswers = Atomic<Bool>(false)
    /// The buffer the last answers went out in, written again for the next ones once the socket
    /// has taken it (then nothing else holds it): a buffer a commit was two allocations.
    private let answerBuffer: NIOLoopBoundBox<ByteBuffer?>
    /// The largest answer buffer kept for the next answers.
    private static let keptAnswerBytes = 4096

    init(channel: any Channel, watermarks: ChannelOptions.Types.WriteBufferWaterMark) {
        self.channel = channel
        self.watermarks = watermarks
        self.paced = .makeBoxSendingValue(PacedOutput(), eventLoop: channel.eventLoop)
        self.answerBuffer = .makeEmptyBox(valueType: ByteBuffer.self, eventLoop: channel.eventLoop)
    }

    package var isBacklogged: Bool { backlogged.load(ordering: .relaxed) }

    /// How often this connection fell behind and was resynchronised.
    var resyncs: UInt64 { resyncCount.load(ordering: .relaxed) }

    /// How many watch events were delivered to it live.
    var eventsDelivered: UInt64 { deliveredCount.load(ordering: .relaxed) }

    package func countDelivered(_ events: Int) {
        deliveredCount.wrappingAdd(UInt64(events), ordering: .relaxed)
    }

    /// Counts one resynchronisation.
    func countResync() {
        resyncCount.wrappingAdd(1, ordering: .relaxed)
    }

    /// The bytes queued in the channel or waiting to go out a piece at a time, not yet written to
    /// the socket.
    var queuedBytes: Int {
        get async {
            let (channel, paced) = (self.channel, self.paced)
            let bytes = try? await channel.eventLoop.submit {
                try (channel.syncOptions?.getOption(.bufferedWritableBytes) ?? 0) + paced.value.bytes
            }.get()
            return bytes ?? 0
        }
    }

    /// Records the channel's writability; returns true when the connection just caught up.
    /// Called again with the channel's writability after ``Event/pacedOutputChanged``.
    func writabilityChanged(isWritable: Bool) -> Bool {
        channelIsWritable.store(isWritable, ordering: .relaxed)
        let isWritable = self.isWritable
        return backlogged.exchange(!isWritable, ordering: .relaxed) && isWritable
    }

    // MARK: From other threads

    /// Queues frames from the engine; never writes synchronously, since the engine calls it with
    /// its lock held.
    package func send(_ frames: [ByteBuffer]) {
        channel.eventLoop.execute(countedWrite(frames))
    }

    package func send(_ frames: [ByteBuffer], in batch: inout DeliveryBatch) {
        let isFirst = inFlight.load(ordering: .acquiring) == 0
        batch.add(on: channel.eventLoop, mayGoFirst: isFirst, countedWrite(frames))
    }

    package func receive(_ answers: [WriteAnswer], in batch: inout DeliveryBatch) {
        let isFirst = inFlight.add(1, ordering: .acquiringAndReleasing).oldValue == 0
        batch.add(on: channel.eventLoop, mayGoFirst: isFirst) { [self] in writeOut(answers) }
    }

    package func receive(_ answer: WriteAnswer, in batch: inout DeliveryBatch) {
        let isFirst = inFlight.add(1, ordering: .acquiringAndReleasing).oldValue == 0
        batch.add(on: channel.eventLoop, mayGoFirst: isFirst) { [self] in writeOut(CollectionOfOne(answer)) }
    }

    /// Writes the answers of a commit handed over by `receive`, in one buffer and one write.
    private func writeOut(_ answers: some Collection<WriteAnswer>) {
        var frames: ByteBuffer
        if var kept = answerBuffer.value {
            answerBuffer.value = nil
            // Its storage again when the socket took the last answers; a new one otherwise.
            kept.clear()
            frames = kept
        } else {
            frames = channel.allocator.buffer(capacity: answers.count * 24)
        }
        for answer in answers { answer.appendFrame(to: &frames) }
        emit(frames)
        channel.flush()
        if frames.capacity <= Self.keptAnswerBytes { answerBuffer.value = frames }
        settle(answers.count)
        // Only while the handler waits for it: on the path of every answer otherwise.
        if waitsForAnswers.load(ordering: .relaxed) { tell(.answersWentOut) }
        inFlight.subtract(1, ordering: .acquiringAndReleasing)
    }

    // MARK: On the event loop

    /// Writes a response made on the event loop, behind anything still on its way; the handler
    /// flushes it with ``flush()``.
    func respond(_ frame: ByteBuffer) {
        channel.eventLoop.assertInEventLoop()
        if inFlight.load(ordering: .acquiring) == 0 {
            emit(frame)
        } else {
            channel.eventLoop.execute(countedWrite([frame]))
        }
    }

    /// Flushes the responses written by ``respond(_:)``.
    func flush() {
        channel.flush()
    }

    /// How many writes handed to the engine await their answers.
    var answersOwed: Int { owed.load(ordering: .acquiring) }

    /// Whether the handler waits for answers to go out (it stopped reading for too many writes
    /// in flight), so that the writer tells it ``Event/answersWentOut``.
    var isWaitingForAnswers: Bool {
        get { waitsForAnswers.load(ordering: .relaxed) }
        set { waitsForAnswers.store(newValue, ordering: .relaxed) }
    }

    /// Counts writes answered some other way than ``receive(_:in:)`` (a restore, answered by its
    /// suspension): on the event loop.
    func answeredElsewhere(_ count: Int) {
        channel.eventLoop.assertInEventLoop()
        settle(count)
    }

    /// Whether the channel takes more without passing its high watermark.
    var isWritable: Bool {
        channelIsWritable.load(ordering: .relaxed) && !pacedIsOver.load(ordering: .relaxed)
    }

    /// Counts writes handed to the engine, whose answers ``receive(_:in:)`` will get.
    func expectAnswers(_ count: Int) {
        owed.add(count, ordering: .acquiringAndReleasing)
    }

    /// Tells the handler ``Event/allAnswered`` once every write handed to the engine has been
    /// answered; returns false, telling nothing, when none waits for its answer now.
    func notifyWhenAllAnswered() -> Bool {
        channel.eventLoop.assertInEventLoop()
        waitsUntilAllAnswered.store(true, ordering: .sequentiallyConsistent)
        guard owed.load(ordering: .sequentiallyConsistent) > 0 else {
            waitsUntilAllAnswered.store(false, ordering: .relaxed)
            return false
        }
        return true
    }

    /// Counts `count` writes answered, on the event loop; tells the handler when that was the
    /// last it waited for.
    private func settle(_ count: Int) {
        if owed.subtract(count, ordering: .sequentiallyConsistent).newValue == 0,
            waitsUntilAllAnswered.exchange(false, ordering: .sequentiallyConsistent)
        {
            tell(.allAnswered)
        }
    }

    /// Tells the handler `event`, through the pipeline; on the event loop.
    private func tell(_ event: Event) {
        channel.pipeline.fireUserInboundEventTriggered(event)
    }

    /// Writes a last frame behind everything queued, then closes the connection.
    func sendLastAndClose(_ frame: ByteBuffer) {
        let channel = self.channel
        channel.eventLoop.execute(
            counted { [self] in
                let written = channel.eventLoop.makePromise(of: Void.self)
                written.futureResult.whenComplete { _ in channel.close(promise: nil) }
                emit(frame, promise: written)
                channel.flush()
            }
        )
    }

    /// `body`, counted in ``inFlight`` from now until it has run on the event loop; handed to the
    /// loop in order, it runs after every frame queued before it.
    private func counted(_ body: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
        inFlight.add(1, ordering: .acquiringAndReleasing)
        return { [self] in
            body()
            inFlight.subtract(1, ordering: .acquiringAndReleasing)
        }
    }

    /// Writes `frames` and flushes them once, counted in ``inFlight`` like ``counted(_:)``: one
    /// closure rather than one around another, on the path of every delivery.
    private func countedWrite(_ frames: [ByteBuffer]) -> @Sendable () -> Void {
        inFlight.add(1, ordering: .acquiringAndReleasing)
        return { [self] in
            emit(frames)
            channel.flush()
            inFlight.subtract(1, ordering: .acquiringAndReleasing)
        }
    }

    // MARK: Large output, a piece at a time

    /// Writes `frame` (unflushed), or queues it behind the output going out a piece at a time.
    private func emit(_ frame: ByteBuffer, promise: EventLoopPromise<Void>? = nil) {
        if paced.value.isEmpty && frame.readableBytes <= Self.pieceBytes {
            channel.write(frame, promise: promise)
        } else {
            pace([(frame, promise)])
        }
    }

    /// Writes `frames` (unflushed), or sends them a piece at a time when they are more than one
    /// piece together.
    private func emit(_ frames: [ByteBuffer]) {
        let bytes = frames.reduce(0) { $0 + $1.readableBytes }
        if paced.value.isEmpty && frames.count > 1 && bytes <= Self.joinedBytes {
            var joined = channel.allocator.buffer(capacity: bytes)
            for frame in frames { joined.writeImmutableBuffer(frame) }
            channel.write(joined, promise: nil)
        } else if paced.value.isEmpty && bytes <= Self.pieceBytes {
            for frame in frames { channel.write(frame, promise: nil) }
        } else {
            pace(frames.map { ($0, nil) })
        }
    }

    private func pace(_ frames: [(ByteBuffer, EventLoopPromise<Void>?)]) {
        for (frame, promise) in frames { paced.value.append(frame, promise: promise) }
        writeNextPiece()
        pacedDidChange()
    }

    /// Hands the channel the next piece, unless one is still on its way to the socket; the one
    /// after goes on a later turn of the loop, once this one is in the socket.
    private func writeNextPiece() {
        guard !paced.value.hasPieceInFlight else { return }
        let piece = paced.value.takePiece(of: Self.pieceBytes)
        guard let last = piece.last else { return }
        for (buffer, promise) in piece.dropLast() { channel.write(buffer, promise: promise) }
        let written = channel.eventLoop.makePromise(of: Void.self)
        if let promise = last.1 { written.futureResult.cascade(to: promise) }
        channel.writeAndFlush(last.0, promise: written)
        pacedDidChange()
        let eventLoop = channel.eventLoop
        written.futureResult.whenComplete { [self] result in
            paced.value.hasPieceInFlight = false
            switch result {
            case .success where !paced.value.isEmpty:
                // On a later turn: what other connections on this loop are ready for goes first.
                eventLoop.execute { self.writeNextPiece() }
            case .success:
                break
            case .failure(let error):
                for promise in paced.value.drop() { promise?.fail(error) }
                pacedDidChange()
            }
        }
    }

    /// Publishes whether what waits to go out a piece at a time is over the watermarks, and
    /// tells the handler when that changed.
    private func pacedDidChange() {
        let bytes = paced.value.bytes
        let wasOver = pacedIsOver.load(ordering: .relaxed)
        let isOver = wasOver ? bytes > watermarks.low : bytes > watermarks.high
        guard isOver != wasOver else { return }
        pacedIsOver.store(isOver, ordering: .relaxed)
        tell(.pacedOutputChanged)
    }
}

/// What a connection sends a piece at a time: the frames, in order, not yet handed to its channel.
private struct PacedOutput {
    private var queue = CircularBuffer<(frame: ByteBuffer, promise: EventLoopPromise<Void>?)>()
    /// The bytes not yet handed to the channel.
    private(set) var bytes = 0
    /// Whether the last piece handed to the channel is not yet in the socket.
    var hasPieceInFlight = false

    var isEmpty: Bool { queue.isEmpty }

    mutating func append(_ frame: ByteBuffer, promise: EventLoopPromise<Void>?) {
        queue.append((frame, promise))
        bytes += frame.readableBytes
    }

    /// Up to `size` bytes from the front: whole frames, then a slice of the one that does not
    /// fit; a frame's promise goes with its last byte.
    mutating func takePiece(of size: Int) -> [(ByteBuffer, EventLoopPromise<Void>?)] {
        var piece: [(ByteBuffer, EventLoopPromise<Void>?)] = []
        var room = size
        while room > 0, let (first, promise) = queue.first {
            var frame = first
            if frame.readableBytes <= room {
                queue.removeFirst()
                piece.append((frame, promise))
                room -= frame.readableBytes
            } else {
                piece.append((frame.readSlice(length: room)!, nil))
                queue[queue.startIndex] = (frame, promise)
                room = 0
            }
        }
        bytes -= size - room
        hasPieceInFlight = !piece.isEmpty
        return piece
    }

    /// Empties it once the connection cannot be written any more: the promises to fail.
    mutating func drop() -> [EventLoopPromise<Void>?] {
        let promises = queue.map(\.promise)
        self = PacedOutput()
        return promises
    }
}

package extension Limits {
    /// A connection's queue bound as NIO's watermarks: backlogged above the high one, caught up
    /// below the low one.
    var outboundWatermarks: ChannelOptions.Types.WriteBufferWaterMark {
        .init(low: maxOutboundQueueBytes / 2, high: maxOutboundQueueBytes)
    }
}
