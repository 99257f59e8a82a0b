import Foundation
import Logging
import NIOCore
import NIOEmbedded
import SharedStateWire
import Testing

@testable import SyncEngine
@testable import SyncSQLite
@testable import SyncServer

/// A connection's handler on an embedded channel, over a real engine and database: the frames a
/// client sends in, the frames it gets back. (Writes and their answers from the engine's writer
/// thread are the integration tests': an embedded loop takes work from its own thread only.)
@Suite struct ConnectionHandlerTests {
    @Test func aHelloIsWelcomedAndEachRequestOfOneReadIsAnsweredInOrder() throws {
        try withHandler { channel in
            let welcome = try exchange(channel, .with { $0.hello = .with { $0.protocolVersion = WireProtocol.version } })
            #expect(welcome.map(\.welcome.protocolVersion) == [WireProtocol.version])

            // An embedded channel's peer has no credentials: the kernel named nobody, who may
            // read and write nothing, and see the status.
            let answers = try exchange(
                channel,
                request(1) {
                    $0.put = .with {
                        $0.key = "a/b"; $0.value = Data("1".utf8)
                    }
                },
                request(2) { $0.status = .init() },
                request(3) { $0.count = .with { $0.prefix = "a/" } },
                request(4) { $0.get = .with { $0.key = "a//b" } }
            )
            #expect(answers.map(\.response.id) == [1, 2, 3, 4])
            #expect(answers.map(\.response.error.code) == [.permissionDenied, .unspecified, .permissionDenied, .invalidArgument])
            #expect(answers[1].response.status.clients == 1)
            let isActive = channel.isActive
            #expect(isActive)
        }
    }

    @Test func aRequestBeforeTheHelloEndsTheConnectionWithAProtocolError() throws {
        try withHandler { channel in
            let answer = try exchange(channel, request(1) { $0.status = .init() })
            #expect(answer.first?.fatal.code == .protocol)
            #expect(answer.first?.fatal.message.contains("Hello") == true)
            let isActive = channel.isActive
            #expect(!isActive)
        }
    }

    @Test func framesCutAnywhereAcrossReadsAreAnsweredWhole() throws {
        try withHandler { channel in
            // The Hello and three requests, arriving a few bytes at a time: every cut, across the
            // length and inside the payload, falls somewhere.
            var bytes = ByteBuffer()
            for frame in [
                .with { $0.hello = .with { $0.protocolVersion = WireProtocol.version } },
                request(1) { $0.status = .init() },
                request(2) { $0.get = .with { $0.key = "a//b" } },
                request(3) { $0.status = .init() },
            ] as [Sharedstate_V1_ClientFrame] {
                var encoded = Frame.encode(frame)
                bytes.writeBuffer(&encoded)
            }
            var answers: [Sharedstate_V1_ServerFrame] = []
            var piece = 1
            while bytes.readableBytes > 0 {
                let slice = bytes.readSlice(length: min(piece, bytes.readableBytes))!
                answers += try exchange(channel, bytes: slice)
                piece = piece % 5 + 1
            }
            #expect(answers.first?.welcome.protocolVersion == WireProtocol.version)
            #expect(answers.dropFirst().map(\.response.id) == [1, 2, 3])
            #expect(answers.dropFirst().map(\.response.error.code) == [.unspecified, .invalidArgument, .unspecified])
            let isActive = channel.isActive
            #expect(isActive)
        }
    }

    @Test func aFrameOverTheLimitEndsTheConnectionNamingItsLength() throws {
        try withHandler { channel in
            _ = try exchange(channel, .with { $0.hello = .with { $0.protocolVersion = WireProtocol.version } })
            // Only its length has arrived: it is refused before the rest.
            var length = ByteBuffer()
            length.writeInteger(UInt32(Limits.default.maxRequestFrameBytes + 1))
            let answer = try exchange(channel, bytes: length)
            #expect(answer.first?.fatal.code == .tooLarge)
            #expect(answer.first?.fatal.message.contains("\(Limits.default.maxRequestFrameBytes + 1) bytes") == true)
            let isActive = channel.isActive
            #expect(!isActive)
        }
    }

    // MARK: Helpers

    private func withHandler(_ body: (EmbeddedChannel) throws -> Void) throws {
        let directory = try TemporaryDirectory()
        let storage = try Storage(path: directory.file("state.sqlite"), durability: .normal)
        let engine = try StateEngine(storage: storage, logger: Logger(label: "test"))
        let environment = ClientSession.Environment(
            engine: engine,
            settings: RuntimeSettings(logLevel: .warning, limits: .default),
            transferDirectory: directory.path,
            logger: Logger(label: "test"),
            connections: ConnectionRegistry(),
            startTime: .now,
            readBackup: { _ throws(SharedStateError) in [] }
        )
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            ConnectionHandler(
                environment: environment, turnWrites: TurnWrites(eventLoop: channel.eventLoop, engine: engine),
                registry: environment.connections, requests: RequestTasks(), limits: .default)
        )
        try channel.connect(to: SocketAddress(unixDomainSocketPath: directory.file("socket"))).wait()
        defer {
            _ = try? channel.finish()
            engine.shutDown()
            try? storage.close()
        }
        try body(channel)
    }

    private func request(_ id: UInt64, _ fill: (inout Sharedstate_V1_Request) -> Void) -> Sharedstate_V1_ClientFrame {
        .with {
            $0.request = .with {
                $0.id = id
                fill(&$0)
            }
        }
    }

    /// Sends `frames` in one read, and returns every frame that came back.
    private func exchange(_ channel: EmbeddedChannel, _ frames: Sharedstate_V1_ClientFrame...) throws -> [Sharedstate_V1_ServerFrame] {
        var bytes = ByteBuffer()
        for frame in frames {
            var encoded = Frame.encode(frame)
            bytes.writeBuffer(&encoded)
        }
        return try exchange(channel, bytes: bytes)
    }

    /// Sends `bytes` as one read, and returns every frame that came back.
    private func exchange(_ channel: EmbeddedChannel, bytes: ByteBuffer) throws -> [Sharedstate_V1_ServerFrame] {
        try channel.writeInbound(bytes)
        channel.embeddedEventLoop.run()
        var answers: [Sharedstate_V1_ServerFrame] = []
        while var buffer = try channel.readOutbound(as: ByteBuffer.self) {
            while let length = buffer.readInteger(as: UInt32.self), let payload = buffer.readSlice(length: Int(length)) {
                answers.append(try Frame.decode(Sharedstate_V1_ServerFrame.self, from: payload))
            }
        }
        return answers
    }
}
