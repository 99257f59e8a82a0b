import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import SharedStateWire
import Synchronization

/// Listens on the Unix socket and runs one ``ClientSession`` per connection, each as a child task.
/// One failing connection never ends the server.
final class SocketServer: Service {
    /// Tunables of the server.
    struct Configuration: Sendable {
        /// Where to listen.
        var listener: Listener
        /// Limits and log level, read per connection and per request so SIGHUP can change them.
        var settings: RuntimeSettings
    }

    /// Where the server listens.
    enum Listener: Sendable {
        /// Bind a new socket at this path.
        case path(String)
        /// Adopt this listening socket (socket activation).
        case descriptor(Int32)
    }

    private let configuration: Configuration
    private let engine: StateEngine
    private let eventLoopGroup: any EventLoopGroup
    private let logger: Logger
    private let onListening: @Sendable () -> Void
    /// Open connections by session id, and whether shutdown has begun (a connection accepted
    /// after that is closed at once).
    private let connections = Mutex<(open: [UInt64: any Channel], isShuttingDown: Bool)>(([:], false))
    private let nextSessionID = Atomic<UInt64>(1)
    private let statusReport: @Sendable (_ clients: Int) -> Sharedstate_V1_StatusResponse

    /// Creates a server; `onListening` is called once the socket accepts connections.
    init(
        configuration: Configuration,
        engine: StateEngine,
        eventLoopGroup: any EventLoopGroup,
        logger: Logger,
        status: @escaping @Sendable (_ clients: Int) -> Sharedstate_V1_StatusResponse,
        onListening: @escaping @Sendable () -> Void
    ) {
        self.configuration = configuration
        self.engine = engine
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
        self.statusReport = status
        self.onListening = onListening
    }

    /// The number of connected clients.
    var clientCount: Int { connections.withLock { $0.open.count } }

    func run() async throws {
        let settings = configuration.settings
        let initializer: @Sendable (any Channel) -> EventLoopFuture<NIOAsyncChannel<ByteBuffer, ByteBuffer>> = { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(
                    ByteToMessageHandler(FrameDecoder(maxFrameBytes: settings.limits.maxRequestFrameBytes))
                )
                return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
            }
        }
        let queueBytes = settings.limits.maxOutboundQueueBytes
        let bootstrap = ServerBootstrap(group: eventLoopGroup)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: queueBytes / 2, high: queueBytes))
        let listener =
            switch configuration.listener {
            case .path(let path):
                try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: false, childChannelInitializer: initializer)
            case .descriptor(let descriptor):
                try await bootstrap.bind(descriptor, childChannelInitializer: initializer)
            }
        onListening()

        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { group in
                try await listener.executeThenClose { inbound in
                    for try await connection in inbound {
                        group.addTask { await self.serve(connection) }
                    }
                }
            }
        } onGracefulShutdown: {
            // Stop accepting, then end every connection; writes already queued still commit.
            listener.channel.close(promise: nil)
            let open = self.connections.withLock { connections in
                connections.isShuttingDown = true
                return Array(connections.open.values)
            }
            for channel in open {
                channel.close(promise: nil)
            }
        }
    }

    private func serve(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async {
        let sessionID = nextSessionID.wrappingAdd(1, ordering: .relaxed).oldValue
        let writer = ConnectionWriter(channel: connection.channel)
        let engine = self.engine
        try? await connection.channel.pipeline.addHandler(
            BacklogHandler(writer: writer, caughtUp: { engine.resync(writer) }),
            position: .first
        )
        let session = ClientSession(
            sessionID: sessionID,
            writer: writer,
            engine: engine,
            settings: configuration.settings,
            logger: logger,
            status: { [weak self] in self?.statusReport(self?.clientCount ?? 0) ?? .init() }
        )
        let isShuttingDown = connections.withLock { connections in
            connections.open[sessionID] = connection.channel
            return connections.isShuttingDown
        }
        if isShuttingDown { connection.channel.close(promise: nil) }
        defer {
            session.end()
            connections.withLock { _ = $0.open.removeValue(forKey: sessionID) }
            logger.debug("client left", metadata: ["session": "\(sessionID)", "name": "\(session.peer.clientName)"])
        }
        do {
            try await connection.executeThenClose { inbound, _ in
                do {
                    for try await payload in inbound {
                        if case .close(let error) = await session.receive(payload) {
                            await close(writer, because: error, session: session)
                            return
                        }
                    }
                } catch let error as SharedStateError {
                    await close(writer, because: error, session: session)
                }
            }
        } catch {
            logger.debug("connection failed", metadata: ["session": "\(sessionID)", "error": "\(error)"])
        }
    }

    private func close(_ writer: ConnectionWriter, because error: SharedStateError, session: ClientSession) async {
        logger.info(
            "closing connection after a protocol error",
            metadata: ["session": "\(session.peer.sessionID)", "name": "\(session.peer.clientName)", "error": "\(error)"]
        )
        await writer.sendLast(Frame.encode(Sharedstate_V1_ServerFrame.with { $0.fatal = error.wireValue }, allocator: writer.allocator))
    }
}
