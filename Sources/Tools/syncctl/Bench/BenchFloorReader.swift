import Foundation
import NIOCore
import NIOPosix
import SharedStateWire

/// A `bench fanout` subscriber's watch read without SyncClient (`--reader nio` or `read`): the
/// floors under the client's cost per delivered event. Both say hello, start the same watch, cut
/// the frames with ``FrameDecoder`` and decode each event with ``WatchEventFrame``, as SyncClient's
/// `RoutingHandler` does, then count its changes as a client subscriber does
/// (``BenchSubscriberTally``). What they leave out is SyncClient's: routing, the cursor, the
/// watch's buffer and resuming the consuming task. `nio` reads on a NIO event loop, as SyncClient
/// does; `read` calls read(2) on a blocking socket, as the C peer (`fanout-peer`) does.
enum BenchFloorReader {
    enum Transport {
        case nio, read
    }

    /// Reads the watch of `bench/` after `revision` until `tally` is complete; returns its report.
    static func run(_ transport: Transport, socket path: String, after revision: UInt64, tally: BenchSubscriberTally) async throws
        -> BenchSubscriberCommand.Report
    {
        let descriptor = try BenchSocket.connected(to: path)
        let watch = Sharedstate_V1_ClientFrame.with {
            $0.request = .with {
                $0.id = 1
                $0.watch = .with {
                    $0.prefixes = ["bench/"]
                    $0.afterRevision = revision
                }
            }
        }
        try BenchSocket.writeAll(Frame.encode(watch), to: descriptor)
        switch transport {
        case .read:
            defer { close(descriptor) }
            return try readBlocking(descriptor, tally: tally)
        case .nio:
            return try await readOnEventLoop(descriptor, tally: tally)
        }
    }

    /// The blocking read loop, on this thread.
    private static func readBlocking(_ descriptor: CInt, tally: BenchSubscriberTally) throws -> BenchSubscriberCommand.Report {
        var consumer = FrameConsumer(tally: tally)
        var buffer = ByteBufferAllocator().buffer(capacity: 1 << 16)
        while !consumer.tally.isComplete {
            try BenchSocket.readSome(descriptor, into: &buffer)
            try consumer.receive(buffer)
        }
        return consumer.tally.finish()
    }

    /// The read loop of a NIO channel on one of NIO's shared loops, as SyncClient reads.
    private static func readOnEventLoop(_ descriptor: CInt, tally: BenchSubscriberTally) async throws -> BenchSubscriberCommand.Report {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let finished = loop.makePromise(of: BenchSubscriberCommand.Report.self)
        let channel = try await ClientBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(FloorHandler(tally: tally, finished: finished))
                }
            }
            .withConnectedSocket(descriptor)
            .get()
        defer { channel.close(promise: nil) }
        return try await finished.futureResult.get()
    }

    /// Cuts frames, decodes each event and hands its changes to the tally.
    private struct FrameConsumer {
        var tally: BenchSubscriberTally
        private var frames = FrameDecoder(maxFrameBytes: WireProtocol.maxServerFrameBytes)

        init(tally: BenchSubscriberTally) {
            self.tally = tally
        }

        mutating func receive(_ bytes: ByteBuffer) throws {
            frames.receive(bytes)
            while let frame = try frames.next() {
                if let event = WatchEventFrame(frame: frame) {
                    guard event.kind != .progress else { continue }
                    tally.take(revision: event.revision, changes: event.changes, receivedAt: MonotonicClock.nanoseconds)
                    continue
                }
                // The watch's start; anything else ends the benchmark with what syncd said.
                switch try Frame.decode(Sharedstate_V1_ServerFrame.self, from: frame).kind {
                case .response(let response):
                    if case .error(let error) = response.result {
                        throw SharedStateError(.protocolViolation, "syncd refused the watch: \(error.message)")
                    }
                case .fatal(let error):
                    throw SharedStateError(.unavailable, "syncd ended the connection: \(error.message)")
                default:
                    throw SharedStateError(.protocolViolation, "syncd sent a frame the benchmark does not expect")
                }
            }
        }
    }

    private final class FloorHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer

        private var consumer: FrameConsumer
        private let finished: EventLoopPromise<BenchSubscriberCommand.Report>
        private var isDone = false

        init(tally: BenchSubscriberTally, finished: EventLoopPromise<BenchSubscriberCommand.Report>) {
            self.consumer = FrameConsumer(tally: tally)
            self.finished = finished
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !isDone else { return }
            do {
                try consumer.receive(unwrapInboundIn(data))
                if consumer.tally.isComplete { end(.success(consumer.tally.finish())) }
            } catch {
                end(.failure(error))
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            end(.failure(SharedStateError(.unavailable, "syncd closed the connection before every write arrived")))
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            end(.failure(error))
        }

        private func end(_ result: Result<BenchSubscriberCommand.Report, any Error>) {
            guard !isDone else { return }
            isDone = true
            finished.completeWith(result)
        }
    }
}
