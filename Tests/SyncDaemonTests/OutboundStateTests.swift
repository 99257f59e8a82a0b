import NIOCore
import NIOEmbedded
import SharedStateWire
import TestSupport
import Testing

@testable import SyncEngine
@testable import SyncServer

/// A connection's outbound state, without a socket or a channel: a model socket that takes what
/// each test says, a model channel that writes its hand-offs when told, and every effect the
/// state decides carried out by the test. Random interleavings of frames, flushes, a filling and
/// draining socket, a slow channel and the loop's later turns check that every byte reaches the
/// peer once and in order, that nothing goes to the socket directly while the channel holds
/// something, that a flush's promise succeeds only once its bytes are out, and that the handler
/// is told when the paced output crosses a watermark.
@Suite struct OutboundStateTests {
    @Test(arguments: 0..<30) func everyByteLeavesOnceInOrderWhateverTheSocketAndChannelDo(seed: Int) {
        var random = SeededGenerator(seed: UInt64(seed) &+ 1)
        let peer = ModelPeer(random: random.next())
        for _ in 0..<400 {
            switch random.next() % 16 {
            case 0...4: peer.update { $0.join(peer.frame(of: 1 + Int(random.next() % 400))) }
            case 5: peer.update { $0.join(peer.frame(of: OutboundState.joinedBytes + Int(random.next() % 4096))) }
            case 6:
                let count = 1 + Int(random.next() % 6)
                let large = random.next() % 8 == 0
                let frames = (0..<count).map { _ in peer.frame(of: large ? OutboundState.pieceBytes / 2 + Int(random.next() % 9000) : 200) }
                peer.update {
                    $0.join(frames)
                    $0.flush()
                }
            case 7, 8: peer.update { $0.flush() }
            case 9: peer.flushWithPromise()
            case 10: peer.socketRoom = [0, 0, 100, 5_000, 70_000, Int.max][Int(random.next() % 6)]
            case 11, 12: peer.channelWritesOne()
            case 13: peer.runLaterTurn()
            default: peer.update { _ in }
            }
            peer.checkInvariants()
        }
        // Everything joined goes out once the socket and the channel keep up.
        peer.socketRoom = Int.max
        peer.update { $0.flush() }
        peer.drainEverything()
        #expect(peer.received == peer.joined)
        #expect(peer.promisesOutstanding == 0)
        #expect(peer.state.heldBytes == 0)
        #expect(peer.state.isWritable)
    }

    /// A socket that keeps up takes everything directly: nothing goes through the channel, and a
    /// joined buffer's storage is kept for the next frames.
    @Test func aSocketThatKeepsUpIsWrittenDirectlyAndTheChannelIsNeverUsed() {
        let peer = ModelPeer(random: 1)
        for size in [10, 300, 20_000, 7] {
            peer.update {
                $0.join(peer.frame(of: size))
                $0.flush()
            }
        }
        #expect(peer.handOffs == 0)
        #expect(peer.received == peer.joined)
    }

    /// Once the socket is full, what follows waits in the channel; while it does, nothing goes
    /// directly, even when the socket has room again.
    @Test func whileTheChannelHoldsBytesNothingOvertakesThem() {
        let peer = ModelPeer(random: 2)
        peer.socketRoom = 50
        peer.update {
            $0.join(peer.frame(of: 120))
            $0.flush()
        }
        #expect(peer.received.count == 50)
        #expect(peer.handOffs == 1)
        peer.socketRoom = Int.max
        peer.update {
            $0.join(peer.frame(of: 30))
            $0.flush()
        }
        #expect(peer.received.count == 50, "went to the socket before what the channel holds")
        #expect(peer.handOffs == 2)
        peer.drainEverything()
        #expect(peer.received == peer.joined)
        peer.update {
            $0.join(peer.frame(of: 30))
            $0.flush()
        }
        #expect(peer.handOffs == 2, "the channel is empty again: written directly")
        #expect(peer.received == peer.joined)
    }

    /// Output of several pieces leaves one piece at a time, the next on a later turn once the
    /// last is written; crossing the high watermark is told once, and the low one once again.
    @Test func largeOutputGoesAPieceAtATimeAndCrossesTheWatermarksOnce() {
        let peer = ModelPeer(random: 3, watermarks: .init(low: 100_000, high: 300_000))
        peer.socketRoom = 0
        peer.update { $0.join([peer.frame(of: 4 * OutboundState.pieceBytes)]) }
        #expect(peer.pieces == 1)
        #expect(peer.told == [.pacedOutputChanged])
        #expect(!peer.state.isWritable)
        peer.channelWritesOne()
        #expect(peer.laterTurns == 1, "the next piece waits for a later turn")
        #expect(peer.pieces == 1)
        peer.runLaterTurn()
        #expect(peer.pieces == 2)
        peer.drainEverything()
        #expect(peer.pieces == 4)
        #expect(peer.told == [.pacedOutputChanged, .pacedOutputChanged])
        #expect(peer.state.isWritable)
        #expect(peer.received == peer.joined)
    }

    /// A channel that fails a piece fails the promises of what waited behind it.
    @Test func aFailedPieceFailsWhatWaitedBehindIt() {
        let peer = ModelPeer(random: 4, watermarks: .init(low: 1 << 20, high: 1 << 21))
        peer.socketRoom = 0
        peer.update { $0.join([peer.frame(of: 3 * OutboundState.pieceBytes)]) }
        peer.flushWithPromise()
        #expect(peer.promisesOutstanding == 1)
        peer.channelFailsOne()
        #expect(peer.promisesOutstanding == 0)
        #expect(peer.promisesFailed == 1)
    }

    /// Answers owed are counted; the handler is told `allAnswered` once, when the last one owed
    /// goes out after it asked, and `answersWentOut` only while it waits for that.
    @Test func theHandlerIsToldOfAnswersOnlyWhenItWaitsForThem() {
        let peer = ModelPeer(random: 5)
        peer.update { $0.expectAnswers(3) }
        peer.update { $0.join(answers: [Self.answer(1)]) }
        #expect(peer.told.isEmpty)
        peer.update { $0.isWaitingForAnswers = true }
        peer.update { $0.join(answers: [Self.answer(2)]) }
        #expect(peer.told == [.answersWentOut])
        #expect(peer.update { $0.notifyWhenAllAnswered() })
        peer.update { $0.answeredElsewhere(1) }
        #expect(peer.told == [.answersWentOut, .allAnswered])
        #expect(peer.state.answersOwed == 0)
        #expect(!peer.update { $0.notifyWhenAllAnswered() }, "nothing owed: nothing to wait for")
    }

    private static func answer(_ id: UInt64) -> WriteAnswer {
        WriteAnswer(requestID: id, result: .success(.put(revision: id, version: 1)))
    }
}

/// The peer of a model connection: the socket's and the channel's side, and what reached it.
/// Used by one test's thread only (its promises' callbacks run inline on an embedded loop).
private final class ModelPeer: @unchecked Sendable {
    var state: OutboundState!
    /// Every byte joined, in order, and every byte the peer received, in order.
    private(set) var joined: [UInt8] = []
    private(set) var received: [UInt8] = []
    /// How many bytes the socket takes at the next direct write.
    var socketRoom = Int.max
    private(set) var handOffs = 0
    private(set) var pieces = 0
    private(set) var laterTurns = 0
    private(set) var told: [ConnectionWriter.Event] = []
    private(set) var promisesOutstanding = 0
    private(set) var promisesFailed = 0
    private var pacedIsOver = false
    private var channelQueue: [(buffers: [(ByteBuffer, EventLoopPromise<Void>?)], isPiece: Bool)] = []
    private let loop = EmbeddedEventLoop()
    private var nextByte: UInt8
    private var checked = 0

    init(random: UInt64, watermarks: ChannelOptions.Types.WriteBufferWaterMark = .init(low: 200_000, high: 400_000)) {
        nextByte = UInt8(truncatingIfNeeded: random)
        state = OutboundState(send: { [unowned self] in self.socketTakes($0) }, allocator: ByteBufferAllocator(), watermarks: watermarks)
    }

    /// A frame of `size` bytes that continue the peer's expected stream.
    func frame(of size: Int) -> ByteBuffer {
        let start = nextByte
        let bytes = (0..<size).map { start &+ UInt8(truncatingIfNeeded: $0) }
        nextByte = start &+ UInt8(truncatingIfNeeded: size)
        joined += bytes
        return ByteBuffer(bytes: bytes)
    }

    private func socketTakes(_ bytes: UnsafeRawBufferPointer) -> Int {
        #expect(channelQueue.isEmpty, "a direct write while the channel holds bytes")
        let taken = min(bytes.count, socketRoom)
        received += bytes.prefix(taken)
        if socketRoom != Int.max { socketRoom -= taken }
        return taken
    }

    /// Runs `body` on the state, then carries out what it decided, as `ConnectionWriter` does.
    @discardableResult
    func update<Result>(_ body: (inout OutboundState) -> Result) -> Result {
        let result = body(&state!)
        while let action = state.nextAction() {
            switch action {
            case .handOff(let bytes, let promise):
                handOffs += 1
                channelQueue.append(([(bytes, promise)], false))
            case .writePiece(let piece):
                pieces += 1
                channelQueue.append((piece, true))
            case .writeNextPieceLater:
                laterTurns += 1
            case .tell(let event):
                told.append(event)
                if event == .pacedOutputChanged { pacedIsOver.toggle() }
            case .succeed(let promise):
                promise.succeed()
            case .fail(let promises, let error):
                for promise in promises { promise.fail(error) }
            }
        }
        return result
    }

    /// A flush whose promise checks that everything joined before it is out when it succeeds.
    func flushWithPromise() {
        let promise = loop.makePromise(of: Void.self)
        let expected = joined.count
        promisesOutstanding += 1
        promise.futureResult.whenComplete { [unowned self] result in
            promisesOutstanding -= 1
            switch result {
            case .success: #expect(received.count >= expected, "a flush's promise succeeded before its bytes were out")
            case .failure: promisesFailed += 1
            }
        }
        update { $0.flush(promise: promise) }
    }

    /// The channel writes its oldest hand-off or piece to the socket, then reports it.
    func channelWritesOne() {
        guard !channelQueue.isEmpty else { return }
        let (buffers, isPiece) = channelQueue.removeFirst()
        for (index, (buffer, promise)) in buffers.enumerated() {
            received += buffer.readableBytesView
            if index < buffers.count - 1 { promise?.succeed() }
        }
        update { isPiece ? $0.pieceWritten(.success(())) : $0.channelWroteHandOff() }
        buffers.last?.1?.succeed()
    }

    /// The channel fails its oldest hand-off or piece (the peer left).
    func channelFailsOne() {
        guard !channelQueue.isEmpty else { return }
        let (buffers, isPiece) = channelQueue.removeFirst()
        struct Gone: Error {}
        update { isPiece ? $0.pieceWritten(.failure(Gone())) : $0.channelWroteHandOff() }
        for (_, promise) in buffers { promise?.fail(Gone()) }
    }

    /// The loop's later turn that writes the next piece.
    func runLaterTurn() {
        guard laterTurns > 0 else { return }
        laterTurns -= 1
        update { $0.writeNextPiece() }
    }

    func drainEverything() {
        while !channelQueue.isEmpty || laterTurns > 0 {
            channelWritesOne()
            runLaterTurn()
        }
    }

    /// What reached the peer is what was joined so far, in order; checked once per byte.
    func checkInvariants() {
        #expect(received.count <= joined.count)
        let new = checked..<min(received.count, joined.count)
        #expect(received[new] == joined[new], "bytes out of order or twice")
        checked = new.upperBound
        #expect(state.isWritable == !pacedIsOver)
    }
}
