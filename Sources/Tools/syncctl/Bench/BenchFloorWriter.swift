import Foundation
import NIOCore
import NIOPosix
import SharedStateWire

/// `bench put`'s puts made without SyncClient (`--writer nio` or `write`): the floors under the
/// client's cost per put. Each connection keeps the same number of puts in flight, writes each
/// put's frame by hand with ``PutRequestFrame`` and reads each answer with ``WriteAnswerFrame``,
/// as the client does, but as the C peer (`fanout-peer writers`) sends them: every put the window
/// has room for in one write, then the answers of one read, with no task, continuation or router
/// per put. `nio` runs each connection on one of NIO's event loops, as SyncClient does; `write`
/// gives each a thread of its own calling write(2) and read(2) on a blocking socket.
enum BenchFloorWriter {
    enum Transport {
        case nio, write
    }

    /// What every connection writes: `count` puts in all, of `value` to `keys` keys under `prefix`.
    struct Work: Sendable {
        var connections: Int
        var pipeline: Int
        var count: Int
        var keys: Int
        var prefix: String
        var value: Data

        /// The puts of connection `index`: every `connections`-th sequence number from `index`.
        func share(of index: Int) -> Int { count / connections + (index < count % connections ? 1 : 0) }
    }

    /// Makes every put of `work`; returns their round-trip latencies.
    static func run(_ transport: Transport, socket path: String, work: Work) async throws -> LatencyHistogram {
        var descriptors: [CInt] = []
        for _ in 0..<work.connections { descriptors.append(try BenchSocket.connected(to: path)) }
        return try await withThrowingTaskGroup(of: LatencyHistogram.self) { group in
            for (index, descriptor) in descriptors.enumerated() {
                group.addTask {
                    switch transport {
                    case .write: try await onThread { try writeBlocking(descriptor, index: index, work: work) }
                    case .nio: try await writeOnEventLoop(descriptor, index: index, work: work)
                    }
                }
            }
            return try await group.reduce(into: LatencyHistogram()) { $0.add($1) }
        }
    }

    /// Runs `body` on a thread of its own, as a C writer process runs.
    private static func onThread(_ body: @escaping @Sendable () throws -> LatencyHistogram) async throws -> LatencyHistogram {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result(catching: body)) }.start()
        }
    }

    private static func writeBlocking(_ descriptor: CInt, index: Int, work: Work) throws -> LatencyHistogram {
        defer { close(descriptor) }
        var puts = PipelinedPuts(index: index, work: work)
        var frames = FrameDecoder(maxFrameBytes: WireProtocol.maxServerFrameBytes)
        var outgoing = ByteBufferAllocator().buffer(capacity: work.pipeline * (work.value.count + 64))
        var incoming = ByteBufferAllocator().buffer(capacity: 1 << 16)
        while !puts.isDone {
            outgoing.clear()
            puts.fill(&outgoing)
            if outgoing.readableBytes > 0 { try BenchSocket.writeAll(outgoing, to: descriptor) }
            try BenchSocket.readSome(descriptor, into: &incoming)
            frames.receive(incoming)
            while let frame = try frames.next() { try puts.answer(frame) }
        }
        return puts.latencies
    }

    private static func writeOnEventLoop(_ descriptor: CInt, index: Int, work: Work) async throws -> LatencyHistogram {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let finished = loop.makePromise(of: LatencyHistogram.self)
        let channel = try await ClientBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        PutsHandler(puts: PipelinedPuts(index: index, work: work), finished: finished))
                }
            }
            .withConnectedSocket(descriptor)
            .get()
        defer { channel.close(promise: nil) }
        return try await finished.futureResult.get()
    }

    /// One connection's puts: which to send next, and their latencies once answered.
    private struct PipelinedPuts {
        private let work: Work
        private let index: Int
        private let share: Int
        private var sent = 0
        private var answered = 0
        /// When each put in flight was sent, by request id.
        private var sentAt: [UInt64: UInt64] = [:]
        private(set) var latencies = LatencyHistogram()

        init(index: Int, work: Work) {
            self.work = work
            self.index = index
            self.share = work.share(of: index)
        }

        var isDone: Bool { answered == share }

        /// Appends a frame for every put the window has room for.
        mutating func fill(_ buffer: inout ByteBuffer) {
            let now = MonotonicClock.nanoseconds
            while sent < share && sent - answered < work.pipeline {
                let sequence = index + sent * work.connections
                let id = UInt64(sent + 1)
                var frame = PutRequestFrame.encode(
                    id: id, key: work.prefix + String(sequence % work.keys), value: work.value, ifVersion: nil, ephemeral: false,
                    cause: "")
                buffer.writeBuffer(&frame)
                sentAt[id] = now
                sent += 1
            }
        }

        /// Takes in one frame from syncd: the answer to a put.
        mutating func answer(_ frame: ByteBuffer) throws {
            let response =
                try WriteAnswerFrame(frame: frame)?.response ?? Frame.decode(Sharedstate_V1_ServerFrame.self, from: frame).response
            if case .error(let error) = response.result {
                throw SharedStateError(.protocolViolation, "syncd refused a put: \(error.message)")
            }
            guard let started = sentAt.removeValue(forKey: response.id) else {
                throw SharedStateError(.protocolViolation, "syncd answered request \(response.id), which was not in flight")
            }
            latencies.record(nanoseconds: MonotonicClock.nanoseconds - started)
            answered += 1
        }
    }

    private final class PutsHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        private var puts: PipelinedPuts
        private var frames = FrameDecoder(maxFrameBytes: WireProtocol.maxServerFrameBytes)
        private let finished: EventLoopPromise<LatencyHistogram>
        private var isDone = false

        init(puts: PipelinedPuts, finished: EventLoopPromise<LatencyHistogram>) {
            self.puts = puts
            self.finished = finished
        }

        func channelActive(context: ChannelHandlerContext) {
            send(context: context)
            context.fireChannelActive()
        }

        func handlerAdded(context: ChannelHandlerContext) {
            if context.channel.isActive { send(context: context) }
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !isDone else { return }
            do {
                frames.receive(unwrapInboundIn(data))
                while let frame = try frames.next() { try puts.answer(frame) }
            } catch {
                return end(.failure(error))
            }
            if puts.isDone { return end(.success(puts.latencies)) }
            send(context: context)
        }

        func channelInactive(context: ChannelHandlerContext) {
            end(.failure(SharedStateError(.unavailable, "syncd closed the connection before every put was answered")))
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            end(.failure(error))
        }

        private func send(context: ChannelHandlerContext) {
            var buffer = context.channel.allocator.buffer(capacity: 0)
            puts.fill(&buffer)
            if buffer.readableBytes > 0 { context.writeAndFlush(wrapOutboundOut(buffer), promise: nil) }
        }

        private func end(_ result: Result<LatencyHistogram, any Error>) {
            guard !isDone else { return }
            isDone = true
            finished.completeWith(result)
        }
    }
}
