import NIOCore
import NIOPosix
import Testing

@testable import SyncEngine
@testable import SyncServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A writer on a real socket writes to it directly while nothing of its connection waits in NIO,
/// hands what the socket does not take to the channel, and queues what follows behind that
/// until the channel has written it all: the peer reads every byte once, in order, across the
/// changes from one way to the other.
@Suite(.timeLimit(.minutes(1))) struct ConnectionWriterSocketTests {
    @Test func everyByteArrivesOnceInOrderWhenTheSocketFillsAndDrains() async throws {
        let pair = try SocketPair(sendBufferBytes: 8 * 1024)
        let group = MultiThreadedEventLoopGroup.singleton
        let channel = try await ClientBootstrap(group: group).withConnectedSocket(pair.syncd).get()
        let writer = ConnectionWriter(channel: channel, descriptor: pair.syncd, watermarks: .init(low: 32 * 1024, high: 64 * 1024))
        var expected: [UInt8] = []
        var counter: UInt8 = 0
        func frames(_ sizes: [Int]) -> [ByteBuffer] {
            sizes.map { size in
                let bytes = (0..<size).map { _ in
                    counter &+= 1
                    return counter
                }
                expected += bytes
                return ByteBuffer(bytes: bytes)
            }
        }

        // The peer reads: small frames from another thread, and a response, go out directly.
        writer.send(frames([10, 20, 30]))
        let response = frames([40])[0]
        try await channel.eventLoop.submit {
            writer.respond(response)
            writer.flush()
        }.get()
        var received = try pair.receive(count: 100)

        // The peer stops reading: a megabyte fills the socket, the rest waits in the channel, and
        // the small frames and the large one made meanwhile wait behind it.
        writer.send(frames([1 << 20]))
        writer.send(frames([7, 9]))
        writer.send(frames(Array(repeating: 100, count: 300)))
        writer.send(frames([OutboundState.pieceBytes + 5]))
        try await channel.eventLoop.submit {}.get()
        #expect(await writer.report.queuedBytes > 64 * 1024)
        #expect(!channel.isWritable)

        // It drains: then small frames go out directly again.
        received += try pair.receive(count: expected.count - received.count)
        for _ in 0..<1000 where await writer.report.queuedBytes > 0 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(await writer.report.queuedBytes == 0)
        #expect(channel.isWritable)
        writer.send(frames([11, 12]))
        let last = frames([13])[0]
        try await channel.eventLoop.submit {
            writer.respond(last)
            writer.flush()
        }.get()
        received += try pair.receive(count: expected.count - received.count)
        #expect(received.count == expected.count)
        #expect(Self.firstDifference(received, expected) == nil)

        // A slow reader while frames of every size keep coming from both sides: the socket has
        // room again and again while the channel still holds bytes, and nothing may overtake them.
        expected = []
        let rounds = (0..<400).map { round in
            let size = round % 50 == 49 ? OutboundState.pieceBytes + round : (round * 7919) % 3000 + 1
            return (sent: frames([size, round % 40 + 1]), response: frames([round % 300 + 1])[0])
        }
        let total = expected.count
        let reading = Task.detached { try pair.receive(count: total, pausingMicroseconds: 50) }
        for (index, round) in rounds.enumerated() {
            writer.send(round.sent)
            try await channel.eventLoop.submit {
                writer.respond(round.response)
                writer.flush()
            }.get()
            if index % 20 == 0 { try await Task.sleep(for: .milliseconds(1)) }
        }
        received = try await reading.value
        #expect(received.count == expected.count)
        #expect(Self.firstDifference(received, expected) == nil)
        try await channel.close()
    }

    /// Where two byte sequences first differ, nil when they are equal: an expectation on the
    /// sequences themselves would print megabytes when it fails.
    private static func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> Int? {
        let common = min(a.count, b.count)
        return (0..<common).first { a[$0] != b[$0] } ?? (a.count == b.count ? nil : common)
    }

    @Test func aLastFrameGoesOutBeforeTheConnectionCloses() async throws {
        let pair = try SocketPair(sendBufferBytes: nil)
        let group = MultiThreadedEventLoopGroup.singleton
        let channel = try await ClientBootstrap(group: group).withConnectedSocket(pair.syncd).get()
        let writer = ConnectionWriter(channel: channel, descriptor: pair.syncd, watermarks: .init(low: 1 << 20, high: 1 << 21))
        writer.send([ByteBuffer(bytes: [1, 2, 3])])
        writer.sendLastAndClose(ByteBuffer(bytes: [4, 5]))
        try await channel.closeFuture.get()
        #expect(try pair.receive(count: 5) == [1, 2, 3, 4, 5])
        #expect(try pair.receiveToEnd().isEmpty)
    }

    @Test func aPeerThatLeftClosesTheConnectionAndNothingElse() async throws {
        let pair = try SocketPair(sendBufferBytes: nil)
        let group = MultiThreadedEventLoopGroup.singleton
        let channel = try await ClientBootstrap(group: group).withConnectedSocket(pair.syncd).get()
        let writer = ConnectionWriter(channel: channel, descriptor: pair.syncd, watermarks: .init(low: 1 << 20, high: 1 << 21))
        pair.closePeer()
        // The direct write fails (no SIGPIPE: the test process would end); the channel meets the
        // same error and closes.
        writer.send([ByteBuffer(bytes: [1, 2, 3])])
        try await channel.eventLoop.submit {
            writer.respond(ByteBuffer(bytes: [4]))
            writer.flush()
        }.get()
        try await channel.closeFuture.get()
        #expect(!channel.isActive)
    }
}

/// Two connected Unix stream sockets: syncd's end, handed to NIO, and the peer's, read here.
private final class SocketPair: @unchecked Sendable {
    // @unchecked: one test reads its peer end while the writer writes the other.
    let syncd: Int32
    private var peer: Int32

    init(sendBufferBytes: Int32?) throws {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0 else {
            throw SocketPairError("socketpair: \(String(cString: strerror(errno)))")
        }
        (syncd, peer) = (ends[0], ends[1])
        if var size = sendBufferBytes {
            _ = setsockopt(syncd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    deinit {
        if peer >= 0 { close(peer) }
    }

    func closePeer() {
        close(peer)
        peer = -1
    }

    /// Exactly `count` bytes from the peer's end, waiting at most ten seconds for each read, and
    /// pausing between reads of at most 4 KiB when told to (a slow reader).
    func receive(count: Int, pausingMicroseconds pause: UInt32? = nil) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: pause == nil ? 64 * 1024 : 4096)
        while bytes.count < count {
            if let pause { usleep(pause) }
            let wanted = min(chunk.count, count - bytes.count)
            let got = try readSome(into: &chunk, wanted)
            guard got > 0 else { throw SocketPairError("the connection ended after \(bytes.count) of \(count) bytes") }
            bytes += chunk[0..<got]
        }
        return bytes
    }

    /// What the peer's end reads until the other end closes.
    func receiveToEnd() throws -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let got = try readSome(into: &chunk, chunk.count)
            if got == 0 { return bytes }
            bytes += chunk[0..<got]
        }
    }

    private func readSome(into chunk: inout [UInt8], _ wanted: Int) throws -> Int {
        var watched = pollfd(fd: peer, events: Int16(POLLIN), revents: 0)
        guard poll(&watched, 1, 10_000) == 1 else { throw SocketPairError("nothing to read for ten seconds") }
        let got = chunk.withUnsafeMutableBytes { read(peer, $0.baseAddress, wanted) }
        guard got >= 0 else { throw SocketPairError("read: \(String(cString: strerror(errno)))") }
        return got
    }
}

private struct SocketPairError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
