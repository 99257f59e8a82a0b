import NIOCore
import SharedStateWire
import SyncEngine

/// The outbound side of one connection as a value, owned by its event loop: the frames joined
/// and not yet written, what the channel holds unwritten, what goes out a piece at a time, the
/// answers owed and who waits for them, and the counts `syncctl clients` shows.
///
/// Its operations decide; the effects they call for — a hand-off to the channel, a piece, a word
/// to the connection's handler, a promise kept or broken — wait as ``Action``s, in order, for its
/// owner to take with ``nextAction()`` and carry out (``ConnectionWriter``), reporting back what
/// the channel did (``channelWroteHandOff()``, ``pieceWritten(_:)``). The one effect it makes
/// itself is the direct write to the socket while the channel holds nothing (D39), through the
/// `send` it was given: a test gives one that takes what it likes, and checks every order of
/// events without a socket (`OutboundStateTests`).
///
/// The rules it keeps:
/// - Bytes leave in the order they were joined: directly only while nothing handed to the
///   channel or waiting for a piece is unwritten; through the channel otherwise.
/// - Output larger than ``pieceBytes`` goes a piece at a time, the next once the last is in the
///   socket, on a later turn of the loop (``Action/writeNextPieceLater``).
/// - It is writable unless the channel is over its high watermark or what waits for a piece is
///   (then until it drains below the low one): ``Action/tell(_:)`` of
///   ``ConnectionWriter/Event/pacedOutputChanged`` when the latter changes.
/// - Writes owed an answer are counted; ``ConnectionWriter/Event/allAnswered`` is told once the
///   last is answered after ``notifyWhenAllAnswered()``, and
///   ``ConnectionWriter/Event/answersWentOut`` after answers while ``isWaitingForAnswers``.
struct OutboundState {
    /// An effect for the owner to carry out, in order.
    enum Action {
        /// Write and flush the bytes through the channel; report ``channelWroteHandOff()`` once
        /// NIO has written them (or failed to), then complete the promise as NIO did.
        case handOff(ByteBuffer, EventLoopPromise<Void>?)
        /// Write the piece's buffers through the channel with their promises, flushing after the
        /// last; report ``pieceWritten(_:)`` once the last is written (or failed), then complete
        /// the last one's promise as NIO did.
        case writePiece([(ByteBuffer, EventLoopPromise<Void>?)])
        /// Call ``writeNextPiece()`` on a later turn of the loop: what other connections on it
        /// are ready for goes first.
        case writeNextPieceLater
        /// Tell the connection's handler, through its pipeline.
        case tell(ConnectionWriter.Event)
        /// The promise's bytes are in the socket.
        case succeed(EventLoopPromise<Void>)
        /// The promises' bytes will never be written.
        case fail([EventLoopPromise<Void>], any Error)
    }

    /// The most one connection hands the socket in one turn of its event loop.
    static let pieceBytes = 256 * 1024

    /// Frames of at most this many bytes are copied into one buffer and written together: a
    /// commit's events for a watcher are many small frames, and a write costs more than copying
    /// a few hundred bytes. A larger frame is written on its own.
    static let joinedBytes = 16 * 1024

    /// The largest buffer of joined frames kept for the next ones once the socket took it all.
    static let keptBufferBytes = 4096

    /// Writes to the socket directly: the bytes it took, or -1 with `errno`; nil to write
    /// everything through the channel.
    private let send: ((UnsafeRawBufferPointer) -> Int)?
    private let allocator: ByteBufferAllocator
    private let watermarks: ChannelOptions.Types.WriteBufferWaterMark
    /// Frames joined and not yet written out: responses until the handler's flush. Its storage
    /// is reused while the socket takes everything at once.
    private var unflushed: ByteBuffer?
    /// A frame joined while nothing else was, held as it came: written out alone, it is not
    /// copied (a watcher sent one event per commit hands the commit's shared frame to the
    /// socket). Copied into ``unflushed`` first when anything joins it.
    private var lone: ByteBuffer?
    private var socket = DirectSocketWrites()
    private var paced = PacedOutput()
    /// Whether what waits for a piece passed the high watermark (and has not yet drained below
    /// the low one).
    private var pacedIsOver = false
    private var channelIsWritable = true
    /// Empty, it allocates nothing: an idle connection holds no storage for effects.
    private var actions: [Action] = []

    /// Writes handed to the engine and not yet answered.
    private(set) var answersOwed = 0
    /// Whether the handler waits for ``ConnectionWriter/Event/allAnswered`` (at shutdown).
    private var waitsUntilAllAnswered = false
    /// Whether the handler waits for ``ConnectionWriter/Event/answersWentOut`` (it stopped
    /// reading until they do).
    var isWaitingForAnswers = false
    /// How often the connection fell behind and was resynchronised.
    private(set) var resyncs: UInt64 = 0
    /// How many watch events were delivered to it live.
    private(set) var eventsDelivered: UInt64 = 0
    /// How many of its writes were refused for breaking a schema.
    private(set) var schemaRefusals: UInt64 = 0
    /// The first violation of the latest of them.
    private(set) var lastSchemaRefusal: SchemaViolation?

    /// - Parameters:
    ///   - send: Writes to the connection's socket without waiting, like `send(2)` (nil: never
    ///     directly).
    ///   - allocator: Makes the buffer frames are joined in.
    ///   - watermarks: The channel's, which bound what waits for a piece too.
    init(
        send: ((UnsafeRawBufferPointer) -> Int)?, allocator: ByteBufferAllocator,
        watermarks: ChannelOptions.Types.WriteBufferWaterMark
    ) {
        self.send = send
        self.allocator = allocator
        self.watermarks = watermarks
    }

    // MARK: Effects

    /// The next effect to carry out, in the order they were decided.
    mutating func nextAction() -> Action? {
        // A few at most: taking the first keeps the order and the storage.
        actions.isEmpty ? nil : actions.removeFirst()
    }

    var hasActions: Bool { !actions.isEmpty }

    // MARK: Writability

    /// Whether the channel takes more without passing its high watermark, counting what waits
    /// for a piece.
    var isWritable: Bool { channelIsWritable && !pacedIsOver }

    /// Records the channel's writability; returns ``isWritable``.
    mutating func channelWritabilityChanged(isWritable: Bool) -> Bool {
        channelIsWritable = isWritable
        return self.isWritable
    }

    /// The bytes joined or waiting for a piece (not counting what the channel holds).
    var heldBytes: Int { paced.bytes + (lone?.readableBytes ?? 0) + (unflushed?.readableBytes ?? 0) }

    // MARK: Frames

    /// Whether frames of `bytes` together may be joined one by one (``join(_:)-(ByteBuffer)``)
    /// rather than sent a piece at a time (``join(_:)-([ByteBuffer])``).
    func mayJoin(bytes: Int) -> Bool {
        paced.isEmpty && bytes <= Self.pieceBytes
    }

    /// Adds `frame` to what ``flush(promise:)`` writes out; a frame larger than ``joinedBytes``
    /// is written at once, on its own, after what is there.
    mutating func join(_ frame: ByteBuffer) {
        guard frame.readableBytes > Self.joinedBytes else {
            if lone == nil && (unflushed?.readableBytes ?? 0) == 0 {
                lone = frame
                return
            }
            var frames = takeUnflushed(reserving: frame.readableBytes)
            frames.writeImmutableBuffer(frame)
            unflushed = frames
            return
        }
        flush()
        writeOut(frame, promise: nil)
    }

    /// Adds `frames` to what ``flush(promise:)`` writes out, or sends them a piece at a time when
    /// they are more than one piece together or a piece is already waiting.
    mutating func join(_ frames: [ByteBuffer]) {
        if mayJoin(bytes: frames.reduce(0) { $0 + $1.readableBytes }) {
            for frame in frames { join(frame) }
        } else {
            flush()
            pace(frames.map { ($0, nil) })
        }
    }

    /// Adds the frames of a commit's answers, and writes them out with what was joined before.
    mutating func join(answers: some Collection<WriteAnswer>) {
        var frames = takeUnflushed(reserving: answers.count * 24)
        for answer in answers {
            answer.appendFrame(to: &frames)
            if case .failure(let error) = answer.result, error.code == .schemaViolation {
                schemaRefusals &+= 1
                lastSchemaRefusal = error.violations.first ?? lastSchemaRefusal
            }
        }
        unflushed = consume frames
        flush()
        settle(answers.count)
        // Told only while the handler waits for it: on the path of every answer otherwise.
        if isWaitingForAnswers { actions.append(.tell(.answersWentOut)) }
    }

    /// Writes out what was joined, behind what waits before it.
    /// - Parameter promise: Succeeds once all of it, and everything before it, is in the socket.
    mutating func flush(promise: EventLoopPromise<Void>? = nil) {
        if let frame = lone {
            assert((unflushed?.readableBytes ?? 0) == 0, "a lone frame is held only while nothing is joined")
            lone = nil
            writeOut(frame, promise: promise)
            return
        }
        guard var frames = unflushed, frames.readableBytes > 0 else {
            // After what is still on its way.
            if let promise { writeOut(ByteBuffer(), promise: promise) }
            return
        }
        unflushed = nil
        if writeOut(frames, promise: promise), frames.capacity <= Self.keptBufferBytes {
            // Nothing else holds it now: its storage serves the next frames.
            frames.clear()
            unflushed = frames
        }
    }

    /// The frames not yet written out, taken out (so that appending to them copies nothing), or
    /// an empty buffer with room for `bytes`; a lone frame held is copied in first.
    private mutating func takeUnflushed(reserving bytes: Int) -> ByteBuffer {
        var frames: ByteBuffer
        if let kept = unflushed {
            frames = kept
            unflushed = nil
        } else {
            frames = allocator.buffer(capacity: bytes + (lone?.readableBytes ?? 0))
        }
        if let frame = lone {
            lone = nil
            frames.writeImmutableBuffer(frame)
        }
        return frames
    }

    /// Writes `bytes` behind everything before them: to the socket directly when nothing waits
    /// in the channel or for a piece, and what the socket does not take (all of it otherwise)
    /// through the channel. Returns whether the socket took all of it at once.
    @discardableResult
    private mutating func writeOut(_ bytes: ByteBuffer, promise: EventLoopPromise<Void>?) -> Bool {
        var bytes = bytes
        if let send, paced.isEmpty, socket.mayWriteDirectly, DirectSocketWrites.write(&bytes, by: send) {
            if let promise { actions.append(.succeed(promise)) }
            return true
        }
        if paced.isEmpty && bytes.readableBytes <= Self.pieceBytes {
            socket.handedToChannel()
            actions.append(.handOff(bytes, promise))
        } else {
            pace([(bytes, promise)])
        }
        return false
    }

    /// A hand-off (``Action/handOff(_:_:)``) is written, or failed: the channel holds it no more.
    mutating func channelWroteHandOff() {
        socket.channelWroteHandOff()
    }

    // MARK: A piece at a time

    private mutating func pace(_ frames: [(ByteBuffer, EventLoopPromise<Void>?)]) {
        for (frame, promise) in frames { paced.append(frame, promise: promise) }
        writeNextPiece()
        pacedDidChange()
    }

    /// Hands the channel the next piece (``Action/writePiece(_:)``), unless one is still on its
    /// way to the socket.
    mutating func writeNextPiece() {
        guard !paced.hasPieceInFlight else { return }
        let piece = paced.takePiece(of: Self.pieceBytes)
        guard !piece.isEmpty else { return }
        socket.handedToChannel()
        actions.append(.writePiece(piece))
        pacedDidChange()
    }

    /// The last piece is in the socket, or the channel failed to write it: what waits for a
    /// piece then never goes.
    mutating func pieceWritten(_ result: Result<Void, any Error>) {
        socket.channelWroteHandOff()
        paced.hasPieceInFlight = false
        switch result {
        case .success:
            if !paced.isEmpty { actions.append(.writeNextPieceLater) }
        case .failure(let error):
            let promises = paced.drop()
            if !promises.isEmpty { actions.append(.fail(promises, error)) }
            pacedDidChange()
        }
    }

    /// Tells the handler when what waits for a piece crossed a watermark.
    private mutating func pacedDidChange() {
        let isOver = pacedIsOver ? paced.bytes > watermarks.low : paced.bytes > watermarks.high
        guard isOver != pacedIsOver else { return }
        pacedIsOver = isOver
        actions.append(.tell(.pacedOutputChanged))
    }

    // MARK: Answers owed

    /// Counts writes handed to the engine, whose answers ``join(answers:)`` will write.
    mutating func expectAnswers(_ count: Int) {
        answersOwed += count
    }

    /// Counts writes answered some other way than by ``join(answers:)`` (a restore, answered by
    /// its suspension).
    mutating func answeredElsewhere(_ count: Int) {
        settle(count)
    }

    /// Tells the handler ``ConnectionWriter/Event/allAnswered`` once every write owed an answer
    /// has one; returns false, telling nothing, when none is owed now.
    mutating func notifyWhenAllAnswered() -> Bool {
        waitsUntilAllAnswered = answersOwed > 0
        return waitsUntilAllAnswered
    }

    private mutating func settle(_ count: Int) {
        answersOwed -= count
        assert(answersOwed >= 0, "more writes answered than were owed")
        if answersOwed == 0 && waitsUntilAllAnswered {
            waitsUntilAllAnswered = false
            actions.append(.tell(.allAnswered))
        }
    }

    // MARK: Counts

    /// Counts watch events delivered live.
    mutating func countDelivered(_ events: Int) {
        eventsDelivered &+= UInt64(events)
    }

    /// Counts one resynchronisation.
    mutating func countResync() {
        resyncs &+= 1
    }
}

/// What a connection sends a piece at a time: the frames, in order, not yet handed to its
/// channel, and whether the last piece handed over is still on its way to the socket.
struct PacedOutput {
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
    mutating func drop() -> [EventLoopPromise<Void>] {
        let promises = queue.compactMap(\.promise)
        self = PacedOutput()
        return promises
    }
}
