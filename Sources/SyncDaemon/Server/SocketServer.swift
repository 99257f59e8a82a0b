import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import SharedStateWire
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Listens on the Unix socket and runs one ``ClientSession`` per connection, each as a child task.
/// One failing connection never ends the server.
final class SocketServer: Service {
    /// Tunables of the server.
    struct Configuration: Sendable {
        /// Where to listen.
        var listener: Listener
        /// Limits and log level, read per connection and per request so SIGHUP can change them.
        var settings: RuntimeSettings
        /// Where backup and restore transfers keep their temporary files (next to the database).
        var transferDirectory: String
        /// The group that may connect to a socket syncd creates itself (mode 0660); nil keeps syncd's.
        var socketGroup: gid_t?
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
    private let connections = Mutex<(open: [UInt64: (channel: any Channel, record: ClientRecord)], isShuttingDown: Bool)>(([:], false))
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
        let bootstrap = ServerBootstrap(group: eventLoopGroup)
        let listener =
            switch configuration.listener {
            case .path(let path):
                try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: false, childChannelInitializer: initializer)
            case .descriptor(let descriptor):
                try await bootstrap.bind(descriptor, childChannelInitializer: initializer)
            }
        if case .path(let path) = configuration.listener {
            try Self.restrictAccess(to: path, group: configuration.socketGroup)
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
            // Stop accepting. Each connection stops reading by itself (its read loop is cancelled
            // on graceful shutdown), answers the writes it already handed over (the engine shuts
            // down after the server, so they still commit) and closes. Not reading, rather than
            // shutting the socket's input, keeps the client's own writes from failing early and
            // taking the answers down with its connection.
            listener.channel.close(promise: nil)
            self.connections.withLock { $0.isShuttingDown = true }
        }
    }

    private func serve(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async {
        let sessionID = nextSessionID.wrappingAdd(1, ordering: .relaxed).oldValue
        let writer = ConnectionWriter(channel: connection.channel)
        let engine = self.engine
        // The outbound bound of this connection, read now so a reload applies to new connections.
        let queueBytes = configuration.settings.limits.maxOutboundQueueBytes
        _ = try? await connection.channel.setOption(.writeBufferWaterMark, value: .init(low: queueBytes / 2, high: queueBytes)).get()
        try? await connection.channel.pipeline.addHandler(
            BacklogHandler(
                writer: writer,
                caughtUp: { if engine.resync(writer) > 0 { writer.countResync() } }
            ),
            position: .first
        )
        let record = ClientRecord(
            sessionID: sessionID,
            credentials: await PeerCredentials.read(from: connection.channel),
            writer: writer
        )
        let limits = configuration.settings.limits
        let session = ClientSession(
            record: record,
            transferDirectory: configuration.transferDirectory,
            engine: engine,
            settings: configuration.settings,
            logger: logger,
            status: { [weak self] in self?.statusReport(self?.clientCount ?? 0) ?? .init() },
            clients: { [weak self] in await self?.clientsReport() ?? [] }
        )
        let refusal: SharedStateError? = connections.withLock { connections in
            if connections.open.count >= limits.maxConnections {
                return SharedStateError(.tooLarge, "syncd has \(limits.maxConnections) clients connected, its limit; try again later")
            }
            if let uid = record.credentials?.uid,
                connections.open.values.count(where: { $0.record.credentials?.uid == uid }) >= limits.maxConnectionsPerUser
            {
                return SharedStateError(.tooLarge, "user \(uid) has \(limits.maxConnectionsPerUser) clients connected, the limit per user")
            }
            connections.open[sessionID] = (connection.channel, record)
            if connections.isShuttingDown { connection.channel.close(promise: nil) }
            return nil
        }
        if let refusal {
            logger.warning("refused a connection", metadata: ["pid": "\(record.credentials?.pid ?? 0)", "reason": "\(refusal)"])
            await writer.sendLast(Self.fatalFrame(refusal, allocator: writer.allocator))
            try? await connection.channel.close()
            return
        }
        // A client that sends no Hello (or trickles it) does not keep its connection.
        let handshakeTimeout = connection.channel.eventLoop.scheduleTask(in: .seconds(Int64(limits.handshakeTimeoutSeconds))) {
            guard !record.hasGreeted else { return }
            let error = SharedStateError(.protocolViolation, "no Hello within \(limits.handshakeTimeoutSeconds) s of connecting")
            connection.channel.writeAndFlush(Self.fatalFrame(error, allocator: connection.channel.allocator)).whenComplete { _ in
                connection.channel.close(promise: nil)
            }
        }
        defer {
            handshakeTimeout.cancel()
            session.end()
            connections.withLock { _ = $0.open.removeValue(forKey: sessionID) }
            logger.debug("client left", metadata: ["session": "\(sessionID)", "name": "\(record.clientName)"])
        }
        do {
            try await connection.executeThenClose { inbound, _ in
                let ending: SharedStateError? = await cancelWhenGracefulShutdown {
                    do {
                        for try await payload in inbound {
                            // A busy client always has another frame ready, and the stream hands
                            // it over even to a cancelled task: look for the shutdown here too.
                            if Task.isCancelled { break }
                            if case .close(let error) = await session.receive(payload) { return error }
                        }
                    } catch let error as SharedStateError {
                        return error
                    } catch {
                        self.logger.debug("connection input ended", metadata: ["session": "\(sessionID)", "error": "\(error)"])
                    }
                    return nil
                }
                if let ending {
                    await close(writer, because: ending, session: session)
                    return
                }
                // The client, or a shutdown, ended the input: answer the writes still pending.
                await session.waitForPendingWrites(upTo: .seconds(5))
            }
        } catch {
            logger.debug("connection failed", metadata: ["session": "\(sessionID)", "error": "\(error)"])
        }
    }

    /// Every connected client, for `syncctl clients`.
    private func clientsReport() async -> [Sharedstate_V1_ClientInfo] {
        let records = connections.withLock { $0.open.values.map(\.record) }.sorted { $0.sessionID < $1.sessionID }
        var report: [Sharedstate_V1_ClientInfo] = []
        for record in records {
            let queued = await record.writer.queuedBytes
            let age = ContinuousClock.now - record.connectedAt
            report.append(
                .with {
                    $0.sessionID = record.sessionID
                    $0.name = record.clientName
                    $0.pid = record.credentials?.pid ?? 0
                    $0.uid = record.credentials?.uid ?? 0
                    $0.gid = record.credentials?.gid ?? 0
                    $0.watches = UInt64(engine.watchCount(of: record.writer))
                    $0.queuedBytes = UInt64(queued)
                    $0.resyncs = record.writer.resyncs
                    $0.connectedSeconds = Double(age.components.seconds) + Double(age.components.attoseconds) / 1e18
                }
            )
        }
        return report
    }

    private func close(_ writer: ConnectionWriter, because error: SharedStateError, session: ClientSession) async {
        logger.info(
            "closing connection after a protocol error",
            metadata: ["session": "\(session.record.sessionID)", "name": "\(session.record.clientName)", "error": "\(error)"]
        )
        await writer.sendLast(Self.fatalFrame(error, allocator: writer.allocator))
    }

    private static func fatalFrame(_ error: SharedStateError, allocator: ByteBufferAllocator) -> ByteBuffer {
        Frame.encode(Sharedstate_V1_ServerFrame.with { $0.fatal = error.wireValue }, allocator: allocator)
    }

    /// Lets the owner and `group` connect (mode 0660), nobody else.
    private static func restrictAccess(to path: String, group: gid_t?) throws {
        if let group, chown(path, uid_t.max, group) != 0 {
            throw DaemonStartError("cannot give socket \(path) to group \(group): \(String(cString: strerror(errno)))")
        }
        if chmod(path, 0o660) != 0 {
            throw DaemonStartError("cannot set the mode of socket \(path): \(String(cString: strerror(errno)))")
        }
    }
}
