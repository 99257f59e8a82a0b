import NIOCore
import SharedStateWire
import SyncEngine
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The outbound side of one client connection. Frames from every source leave in the order they
/// were produced: watch events from the engine, answers from the writer, responses from the
/// connection's own handler.
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
/// task handed to the loop. Responses made on the event loop are
/// joined, unless frames from elsewhere are still on their way, and written when the
/// handler has read everything the socket had (``flush()``). Small frames written together are
/// copied into one buffer and written as one, reused while the socket takes all of it.
///
/// Output larger than ``pieceBytes`` at once (a list of a million keys is a frame of hundreds of
/// megabytes, a snapshot as many frames) goes out a piece at a time, the next piece on a later
/// turn of the loop once the last one is in the socket: a peer that reads as fast as syncd writes
/// would otherwise keep one `write` copying all of it, and every other connection on that loop
/// waiting. Frames made meanwhile queue behind it, in order.
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

    /// The most one connection hands the socket in one turn of its event loop.
    static let pieceBytes = 256 * 1024

    /// Frames of at most this many bytes are copied into one buffer and written together: a
    /// commit's events for a watcher are many small frames, and a write costs more than copying
    /// a few hundred bytes. A larger frame is written on its own.
    static let joinedBytes = 16 * 1024

    private let channel: any Channel
    /// The connected socket, written directly while nothing of the connection waits in NIO.
    private let descriptor: Int32?
    private let output: NIOLoopBoundBox<SocketOutput>
    private let watermarks: ChannelOptions.Types.WriteBufferWaterMark
    /// Whether the connection is backlogged, for the engine to read.
    package let backlog = Backlog()
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
    /// The largest buffer of joined frames kept for the next ones once the socket took it all.
    private static let keptBufferBytes = 4096

    /// A writer for `channel`, whose socket is `descriptor` (nil: everything through the channel).
    init(channel: any Channel, descriptor: Int32? = nil, watermarks: ChannelOptions.Types.WriteBufferWaterMark) {
        self.channel = channel
        self.descriptor = descriptor
        self.watermarks = watermarks
        self.paced = .makeBoxSendingValue(PacedOutput(), eventLoop: channel.eventLoop)
        self.output = .makeBoxSendingValue(SocketOutput(), eventLoop: channel.eventLoop)
    }

    package var isBacklogged: Bool { backlog.isBacklogged }

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
                    + (self.output.value.unflushed?.readableBytes ?? 0)
            }.get()
            return bytes ?? 0
        }
    }

    /// Records the channel's writability; returns true when the connection just caught up.
    /// Called again with the channel's writability after ``Event/pacedOutputChanged``.
    func writabilityChanged(isWritable: Bool) -> Bool {
        channelIsWritable.store(isWritable, ordering: .relaxed)
        let isWritable = self.isWritable
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
    /// taken on the loop.
    func send(
        _ messages: [(watchID: UInt64, message: WatchMessage)], framedBy frames: RoundFrames, after prepared: [ByteBuffer],
        in batch: inout DeliveryBatch
    ) {
        let isFirst = inFlight.add(1, ordering: .acquiringAndReleasing).oldValue == 0
        batch.add(on: channel.eventLoop, mayGoFirst: isFirst) { [self] in
            if prepared.isEmpty {
                emit(messages, framedBy: frames)
            } else {
                emit(prepared + messages.map { frames.frame(of: $0.message, watchID: $0.watchID) })
            }
            flush()
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
        var frames = takeUnflushed(reserving: answers.count * 24)
        for answer in answers { answer.appendFrame(to: &frames) }
        output.value.unflushed = consume frames
        flush()
        settle(answers.count)
        // Only while the handler waits for it: on the path of every answer otherwise.
        if waitsForAnswers.load(ordering: .relaxed) { tell(.answersWentOut) }
        inFlight.subtract(1, ordering: .acquiringAndReleasing)
    }

    // MARK: On the event loop

    /// Adds a response made on the event loop, behind anything still on its way; the handler
    /// writes it out with ``flush()``.
    func respond(_ frame: ByteBuffer) {
        channel.eventLoop.assertInEventLoop()
        if inFlight.load(ordering: .acquiring) == 0 {
            emit(frame)
        } else {
            channel.eventLoop.execute(countedWrite([frame]))
        }
    }

    /// Writes out the responses added by ``respond(_:)``, and what else waits to be written.
    /// - Parameter promise: Succeeds once all of it is in the socket.
    func flush(promise: EventLoopPromise<Void>? = nil) {
        channel.eventLoop.assertInEventLoop()
        guard var frames = output.value.unflushed, frames.readableBytes > 0 else {
            // After what is still on its way.
            if let promise { writeOut(ByteBuffer(), promise: promise) }
            return
        }
        output.value.unflushed = nil
        if writeOut(frames, promise: promise), frames.capacity <= Self.keptBufferBytes {
            // Nothing else holds it now: its storage serves the next frames.
            frames.clear()
            output.value.unflushed = frames
        }
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
                emit(frame)
                flush(promise: written)
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
            flush()
            inFlight.subtract(1, ordering: .acquiringAndReleasing)
        }
    }

    // MARK: Writing out

    /// Adds `frame` to what ``flush()`` writes out; a frame larger than ``joinedBytes`` is written
    /// at once, on its own, after what is there.
    private func emit(_ frame: ByteBuffer) {
        guard frame.readableBytes > Self.joinedBytes else {
            var frames = takeUnflushed(reserving: frame.readableBytes)
            frames.writeImmutableBuffer(frame)
            output.value.unflushed = frames
            return
        }
        flush()
        writeOut(frame)
    }

    /// Adds `frames` to what ``flush()`` writes out, or sends them a piece at a time when they are
    /// more than one piece together.
    private func emit(_ frames: [ByteBuffer]) {
        let bytes = frames.reduce(0) { $0 + $1.readableBytes }
        if paced.value.isEmpty && bytes <= Self.pieceBytes {
            for frame in frames { emit(frame) }
        } else {
            flush()
            pace(frames.map { ($0, nil) })
        }
    }

    /// Adds the frames of `messages` to what ``flush()`` writes out, as ``emit(_:)-([ByteBuffer])``
    /// does, taking each from `frames` without a list of them when all are whole revisions'.
    private func emit(_ messages: [(watchID: UInt64, message: WatchMessage)], framedBy frames: RoundFrames) {
        var bytes = 0
        for (watchID, message) in messages {
            guard case .changes(let index, nil, false) = message, let frame = frames.wholeFrame(index, watchID: watchID) else {
                return emit(messages.map { frames.frame(of: $0.message, watchID: $0.watchID) })
            }
            bytes += frame.readableBytes
        }
        guard paced.value.isEmpty && bytes <= Self.pieceBytes else {
            return emit(messages.map { frames.frame(of: $0.message, watchID: $0.watchID) })
        }
        for (watchID, message) in messages {
            if case .changes(let index, nil, false) = message, let frame = frames.wholeFrame(index, watchID: watchID) { emit(frame) }
        }
    }

    /// The frames not yet written out, taken out of ``output`` (so that appending to them copies
    /// nothing), or an empty buffer with room for `bytes`.
    private func takeUnflushed(reserving bytes: Int) -> ByteBuffer {
        guard let frames = output.value.unflushed else { return channel.allocator.buffer(capacity: bytes) }
        output.value.unflushed = nil
        return frames
    }

    /// Writes `bytes` behind everything before them: to the socket itself when nothing of the
    /// connection waits in the channel or to go out a piece at a time, and what the socket does
    /// not take (all of it otherwise) through the channel. Returns whether the socket took all
    /// of it at once; `promise` succeeds once it has.
    @discardableResult
    private func writeOut(_ bytes: ByteBuffer, promise: EventLoopPromise<Void>? = nil) -> Bool {
        var bytes = bytes
        if let descriptor, paced.value.isEmpty, output.value.inChannel == 0, channel.isActive {
            let count = bytes.readableBytes
            let written = count == 0 ? 0 : bytes.withUnsafeReadableBytes { sendWithoutWaiting(descriptor, $0) }
            if written == count {
                promise?.succeed()
                return true
            }
            // Partly written, or not at all (a full socket, or an error the channel meets again
            // and closes the connection for).
            if written > 0 { bytes.moveReaderIndex(forwardBy: written) }
        }
        if paced.value.isEmpty && bytes.readableBytes <= Self.pieceBytes {
            handToChannel(bytes, promise: promise)
        } else {
            pace([(bytes, promise)])
        }
        return false
    }

    /// Writes `bytes` and flushes them through the channel, counted in ``SocketOutput/inChannel``
    /// until they are in the socket; `promise` succeeds then.
    private func handToChannel(_ bytes: ByteBuffer, promise: EventLoopPromise<Void>?) {
        output.value.inChannel += 1
        let written = channel.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenComplete { [self] _ in output.value.inChannel -= 1 }
        if let promise { written.futureResult.cascade(to: promise) }
        channel.writeAndFlush(bytes, promise: written)
    }

    // MARK: Large output, a piece at a time

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
        output.value.inChannel += 1
        let written = channel.eventLoop.makePromise(of: Void.self)
        if let promise = last.1 { written.futureResult.cascade(to: promise) }
        channel.writeAndFlush(last.0, promise: written)
        pacedDidChange()
        let eventLoop = channel.eventLoop
        written.futureResult.whenComplete { [self] result in
            output.value.inChannel -= 1
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

/// What a connection has not yet written out, and what it handed to its channel that is not yet
/// in the socket.
private struct SocketOutput {
    /// Frames joined and not yet written out: responses until the handler's flush. Its storage
    /// is reused while the socket takes everything at once.
    var unflushed: ByteBuffer?
    /// Hand-offs to the channel whose bytes are not all in the socket yet: while any is, output
    /// queues behind them there.
    var inChannel = 0
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
