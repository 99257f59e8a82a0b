import Foundation
import NIOCore
import NIOEmbedded
import SharedStateWire
import Synchronization
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

/// Output larger than one piece leaves a connection a piece at a time, in order, with what waits
/// counted against the connection's queue bound.
///
/// Expectations read the writer and the channel into locals first: describing them (as a failed
/// expectation does) describes an embedded channel's pipeline, which traps in NIO.
@Suite struct ConnectionWriterTests {
    private let piece = OutboundState.pieceBytes

    @Test func largeOutputGoesOutInPiecesAndWhatFollowsItKeepsItsPlace() throws {
        let channel = EmbeddedChannel()
        let writer = ConnectionWriter(channel: channel, watermarks: .init(low: 1 << 29, high: 1 << 30))
        let large = Self.bytes(3 * piece + 10, fill: 1)
        let many = (0..<100).map { Self.bytes(piece / 10, fill: UInt8(2 + $0)) }
        writer.send([Self.bytes(5, fill: 0)])
        writer.send([large])
        writer.send(many)
        writer.send([Self.bytes(3, fill: 255)])
        channel.embeddedEventLoop.run()

        let written = try Self.drain(channel)
        #expect(written.allSatisfy { $0.readableBytes <= piece })
        #expect(written.count > 10)
        let expected = [Self.bytes(5, fill: 0), large] + many + [Self.bytes(3, fill: 255)]
        let (got, want) = (Self.joined(written), Self.joined(expected))
        #expect(got.count == want.count)
        #expect(got == want)
    }

    /// The engine's messages, framed by the round's shared frames, reach the socket byte for
    /// byte as the frames the sink makes for any other receiver, in order: whole revisions
    /// shared, other messages, large output paced, frames prepared ahead of time first.
    @Test func messagesFramedByTheRoundAreTheFramesTheSinkMakes() throws {
        let revisions = [
            CommittedRevision(
                revision: 7, changes: [.put(Entry(key: "a/1", value: Data("1".utf8), version: 1, createRevision: 7, modRevision: 7))]),
            CommittedRevision(
                revision: 8,
                changes: [
                    .put(
                        Entry(
                            key: "a/2", value: Data("[\(String(repeating: "1,", count: 9_000))1]".utf8), version: 2, createRevision: 3,
                            modRevision: 8)),
                    .delete("a/3", revision: 8),
                ]),
        ]
        let rounds: [(prepared: [ByteBuffer], messages: [(watchID: UInt64, message: WatchMessage)])] = [
            (
                [],
                [
                    (1, .changes(revision: 0, selected: nil, withPrevious: false)),
                    (300, .changes(revision: 1, selected: nil, withPrevious: false)),
                ]
            ),
            ([Self.bytes(3, fill: 9)], [(2, .started(revision: 6)), (2, .changes(revision: 0, selected: nil, withPrevious: false))]),
            ([], [(3, .changes(revision: 1, selected: [1], withPrevious: false)), (4, .progress(revision: 8))]),
            ([], Array(repeating: (5, .changes(revision: 1, selected: nil, withPrevious: false)), count: 20)),
        ]
        for (prepared, messages) in rounds {
            let channel = EmbeddedChannel()
            let writer = ConnectionWriter(channel: channel, watermarks: .init(low: 1 << 29, high: 1 << 30))
            let frames = RoundFrames(revisions: revisions)
            for (watchID, message) in messages {
                if case .changes(let index, nil, false) = message { frames.makeWhole(index, watchID: watchID) }
            }
            var batch = DeliveryBatch()
            writer.send(messages, framedBy: frames, after: prepared, live: true, in: &batch)
            batch.dispatch()
            channel.embeddedEventLoop.run()
            let expected = prepared + messages.map { WatchFrames.frame(of: $0.message, watchID: $0.watchID, revisions: revisions) }
            let (got, want) = (Self.joined(try Self.drain(channel)), Self.joined(expected))
            #expect(got.count == want.count)
            #expect(got == want)
        }
    }

    @Test func theWriterTellsItsHandlerWhenAnswersGoOutAndWhenNoneIsOwedAnyMore() throws {
        let channel = EmbeddedChannel()
        let events = WriterEvents()
        try channel.pipeline.syncOperations.addHandler(events)
        let writer = ConnectionWriter(channel: channel, watermarks: .init(low: 1 << 20, high: 1 << 21))
        #expect(!writer.notifyWhenAllAnswered())  // none owed: nothing to wait for
        writer.expectAnswers(2)
        #expect(writer.notifyWhenAllAnswered())
        func answer(_ id: UInt64) -> [ConnectionWriter.Event] {
            var batch = DeliveryBatch()
            writer.receive(.many([WriteAnswer(requestID: id, result: .success(.delete(revision: id)))]), in: &batch)
            batch.dispatch()
            channel.embeddedEventLoop.run()
            return events.received
        }
        // Told of answers only while it waits for them, and of the last one once.
        writer.isWaitingForAnswers = true
        #expect(answer(1) == [.answersWentOut])
        writer.isWaitingForAnswers = false
        #expect(answer(2) == [.answersWentOut, .allAnswered])
        let written = try Self.drain(channel)
        #expect(written.count == 2)
    }

    @Test func anAnswerOnTheConnectionsOwnLoopGoesOutAtOnceOnlyWhenNothingIsQueuedBeforeIt() throws {
        let channel = EmbeddedChannel()
        let writer = ConnectionWriter(channel: channel, watermarks: .init(low: 1 << 20, high: 1 << 21))
        func answer(_ id: UInt64) -> DeliveryBatch.OwnLoopWork {
            writer.expectAnswers(1)
            var batch = DeliveryBatch()
            writer.receive(.one(WriteAnswer(requestID: id, result: .success(.delete(revision: id)))), in: &batch)
            return batch.dispatchKeepingOwnLoop()
        }
        // Nothing queued: it is written when the committing thread runs what it was left.
        answer(1).run()
        #expect(try Self.drain(channel).count == 1)

        // Frames from elsewhere still on their way: the answer queues behind them.
        writer.send([Self.bytes(5, fill: 9)])
        answer(2).run()
        #expect(try Self.drain(channel).isEmpty)
        channel.embeddedEventLoop.run()
        let written = try Self.drain(channel)
        #expect(written.count == 2)
        #expect(written.first == Self.bytes(5, fill: 9))
        #expect(writer.answersOwed == 0)
    }

    @Test func onePieceIsInFlightAtATimeAndWhatWaitsCountsAgainstTheQueueBound() throws {
        let channel = EmbeddedChannel()
        let socket = SocketStandIn()
        try channel.pipeline.syncOperations.addHandler(socket)
        let writer = ConnectionWriter(channel: channel, watermarks: .init(low: piece + 100, high: 2 * piece))
        let events = WriterEvents()
        try channel.pipeline.syncOperations.addHandler(events)
        func state() -> (inFlight: Int, isWritable: Bool, changes: Int) {
            channel.embeddedEventLoop.run()
            return (socket.inFlight, writer.isWritable, events.received.count { $0 == .pacedOutputChanged })
        }

        writer.send([Self.bytes(4 * piece, fill: 7)])
        // One piece in the socket's hands; three wait, over the high mark.
        var now = state()
        #expect(now == (1, false, 1))
        var caughtUp = writer.writabilityChanged(isWritable: true)
        var isBacklogged = writer.isBacklogged
        #expect(!caughtUp && isBacklogged)

        // Frames made meanwhile wait behind it.
        writer.send([Self.bytes(10, fill: 8)])
        now = state()
        #expect(now == (1, false, 1))

        // Two pieces and ten bytes wait: still above the low mark.
        socket.completeOne()
        now = state()
        #expect(now == (1, false, 1))

        // One piece and ten bytes wait: below it.
        socket.completeOne()
        now = state()
        #expect(now == (1, true, 2))
        caughtUp = writer.writabilityChanged(isWritable: true)
        isBacklogged = writer.isBacklogged
        #expect(caughtUp && !isBacklogged)

        while socket.inFlight > 0 {
            socket.completeOne()
            channel.embeddedEventLoop.run()
        }
        let expected = [Self.bytes(4 * piece, fill: 7), Self.bytes(10, fill: 8)]
        #expect(Self.joined(socket.written) == Self.joined(expected))
    }

    @Test func aClosedConnectionFailsWhatWaits() throws {
        let channel = EmbeddedChannel()
        let socket = SocketStandIn()
        try channel.pipeline.syncOperations.addHandler(socket)
        let writer = ConnectionWriter(channel: channel, watermarks: .init(low: piece, high: 2 * piece))
        writer.send([Self.bytes(4 * piece, fill: 7)])
        writer.sendLastAndClose(Self.bytes(10, fill: 9))
        channel.embeddedEventLoop.run()
        socket.failOne()
        channel.embeddedEventLoop.run()
        let isWritable = writer.isWritable
        #expect(isWritable)
        let isActive = channel.isActive
        #expect(!isActive)
    }

    private static func bytes(_ count: Int, fill: UInt8) -> ByteBuffer {
        ByteBuffer(repeating: fill, count: count)
    }

    private static func joined(_ buffers: [ByteBuffer]) -> [UInt8] {
        buffers.flatMap { Array($0.readableBytesView) }
    }

    private static func drain(_ channel: EmbeddedChannel) throws -> [ByteBuffer] {
        var written: [ByteBuffer] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { written.append(buffer) }
        return written
    }
}

/// What a writer tells the handler above it through the pipeline.
final class WriterEvents: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: used on the embedded channel's one thread only.
    typealias InboundIn = ByteBuffer

    private(set) var received: [ConnectionWriter.Event] = []

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ConnectionWriter.Event { received.append(event) }
        context.fireUserInboundEventTriggered(event)
    }
}

/// Stands for a socket that takes writes only when told: it keeps each write and its promise.
private final class SocketStandIn: ChannelOutboundHandler, @unchecked Sendable {
    typealias OutboundIn = ByteBuffer

    private(set) var pending: [(ByteBuffer, EventLoopPromise<Void>?)] = []
    private(set) var written: [ByteBuffer] = []

    /// How many writes it was handed and has not taken.
    var inFlight: Int { pending.count }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        pending.append((unwrapOutboundIn(data), promise))
    }

    func completeOne() {
        let (buffer, promise) = pending.removeFirst()
        written.append(buffer)
        promise?.succeed()
    }

    func failOne() {
        pending.removeFirst().1?.fail(ChannelError.ioOnClosedChannel)
    }
}
