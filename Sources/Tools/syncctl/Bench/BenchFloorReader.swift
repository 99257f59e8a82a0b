import Foundation
import NIOCore
import NIOPosix
import SharedStateWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

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
        let descriptor = try handshake(path)
        let watch = Sharedstate_V1_ClientFrame.with {
            $0.request = .with {
                $0.id = 1
                $0.watch = .with {
                    $0.prefixes = ["bench/"]
                    $0.afterRevision = revision
                }
            }
        }
        try writeAll(Frame.encode(watch), to: descriptor)
        switch transport {
        case .read:
            defer { close(descriptor) }
            return try readBlocking(descriptor, tally: tally)
        case .nio:
            return try await readOnEventLoop(descriptor, tally: tally)
        }
    }

    /// A blocking socket connected to syncd at `path`, after Hello and Welcome.
    private static func handshake(_ path: String) throws -> CInt {
        #if canImport(Glibc) || canImport(Musl)
            let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let descriptor = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw failure("socket") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.utf8.count < capacity else {
            throw SharedStateError(.invalidArgument, "the socket path \(path) is longer than \(capacity - 1) bytes")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            bytes.copyBytes(from: path.utf8)
            bytes[path.utf8.count] = 0
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            close(descriptor)
            throw failure("connecting to \(path)")
        }
        let hello = Sharedstate_V1_ClientFrame.with {
            $0.hello = .with {
                $0.protocolVersion = WireProtocol.version
                $0.clientName = "syncctl bench"
            }
        }
        try writeAll(Frame.encode(hello), to: descriptor)
        var frames = FrameDecoder(maxFrameBytes: WireProtocol.maxServerFrameBytes)
        var buffer = ByteBufferAllocator().buffer(capacity: 4_096)
        while true {
            // syncd sends nothing before the Welcome and nothing after it until the watch starts.
            if let frame = try frames.next() {
                guard case .welcome = try Frame.decode(Sharedstate_V1_ServerFrame.self, from: frame).kind else {
                    throw SharedStateError(.protocolViolation, "syncd at \(path) answered the hello with something other than a welcome")
                }
                return descriptor
            }
            try readSome(descriptor, into: &buffer)
            frames.receive(buffer)
        }
    }

    /// The blocking read loop, on this thread.
    private static func readBlocking(_ descriptor: CInt, tally: BenchSubscriberTally) throws -> BenchSubscriberCommand.Report {
        var consumer = FrameConsumer(tally: tally)
        var buffer = ByteBufferAllocator().buffer(capacity: 1 << 16)
        while !consumer.tally.isComplete {
            try readSome(descriptor, into: &buffer)
            try consumer.receive(buffer)
        }
        return consumer.tally.finish()
    }

    /// The read loop of a NIO channel on an event loop of its own, as SyncClient reads.
    private static func readOnEventLoop(_ descriptor: CInt, tally: BenchSubscriberTally) async throws -> BenchSubscriberCommand.Report {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let finished = group.next().makePromise(of: BenchSubscriberCommand.Report.self)
        let result: Result<BenchSubscriberCommand.Report, any Error>
        do {
            let channel = try await ClientBootstrap(group: group)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(FloorHandler(tally: tally, finished: finished))
                    }
                }
                .withConnectedSocket(descriptor)
                .get()
            defer { channel.close(promise: nil) }
            result = .success(try await finished.futureResult.get())
        } catch {
            result = .failure(error)
        }
        try? await group.shutdownGracefully()
        return try result.get()
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

    private static func writeAll(_ frame: ByteBuffer, to descriptor: CInt) throws {
        var rest = frame
        while rest.readableBytes > 0 {
            let written = rest.withUnsafeReadableBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard written > 0 else { throw failure("writing to syncd") }
            rest.moveReaderIndex(forwardBy: written)
        }
    }

    /// Replaces `buffer`'s contents with what one read(2) returns.
    private static func readSome(_ descriptor: CInt, into buffer: inout ByteBuffer) throws {
        buffer.clear()
        var result = 0
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 1 << 16) { bytes in
            result = read(descriptor, bytes.baseAddress, bytes.count)
            return max(result, 0)
        }
        if result == 0 { throw SharedStateError(.unavailable, "syncd closed the connection before every write arrived") }
        if result < 0 { throw failure("reading from syncd") }
    }

    private static func failure(_ what: String) -> SharedStateError {
        SharedStateError(.unavailable, "\(what) failed: \(String(cString: strerror(errno)))")
    }
}
