import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import SharedStateWire
import SyncEngine

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Listens on the Unix socket and serves each connection with a ``ConnectionHandler`` on its
/// event loop. One failing connection never ends the server.
///
/// A ``ConnectionAcceptor`` accepts the connections, and NIO serves each connected socket; the
/// handler is told the socket's descriptor, which its ``ConnectionWriter`` writes to directly
/// while nothing of the connection waits in NIO.
package final class SocketServer: Service {
    /// Tunables of the server.
    package struct Configuration: Sendable {
        /// Where to listen.
        package var listener: Listener
        /// Limits and log level, read per connection and per request so SIGHUP can change them.
        package var settings: RuntimeSettings
        /// Where backup and restore transfers keep their temporary files (next to the database).
        package var transferDirectory: String
        /// The group that may connect to a socket syncd creates itself (mode 0660); nil keeps syncd's.
        package var socketGroup: gid_t?
        /// When syncd started, for the uptime `status` shows.
        package var startTime: ContinuousClock.Instant = .now
        /// Reads the entries of a backup file (a copy of syncd's SQLite database) to restore.
        package var readBackup: @Sendable (String) throws(SharedStateError) -> [Entry]

        package init(
            listener: Listener, settings: RuntimeSettings, transferDirectory: String, socketGroup: gid_t? = nil,
            startTime: ContinuousClock.Instant = .now, readBackup: @escaping @Sendable (String) throws(SharedStateError) -> [Entry]
        ) {
            self.listener = listener
            self.settings = settings
            self.transferDirectory = transferDirectory
            self.socketGroup = socketGroup
            self.startTime = startTime
            self.readBackup = readBackup
        }
    }

    /// Where the server listens.
    package enum Listener: Sendable {
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
    private let connections: ConnectionRegistry
    /// The requests that wait, which shutdown awaits before the engine closes.
    private let requests = RequestTasks()

    /// Creates a server; `onListening` is called once the socket accepts connections.
    package init(
        configuration: Configuration,
        engine: StateEngine,
        eventLoopGroup: any EventLoopGroup,
        logger: Logger,
        onListening: @escaping @Sendable () -> Void
    ) {
        self.configuration = configuration
        self.engine = engine
        self.connections = ConnectionRegistry(lastSessionID: engine.lastSessionIDOfEarlierRuns, metrics: engine.metrics)
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
        self.onListening = onListening
    }

    /// The number of connected clients.
    package var clientCount: Int { connections.count }

    /// Puts the access policy in force now (after a reload) on every connection's watches: each
    /// shows what its user may read under it, and one that may read nothing under a prefix it
    /// watches ends. Returns how many ended.
    package func reapplyAccessPolicy() -> Int {
        let policy = configuration.settings.policy
        var ended = 0
        for record in connections.records {
            let permissions = policy.permissions(for: record.principal)
            ended += engine.restrictWatches(of: record.writer, to: permissions.readFilter, who: record.who)
        }
        return ended
    }

    /// Closes the connection of session `sessionID` at once, `error` its last frame.
    package func close(session sessionID: UInt64, because error: SharedStateError) {
        connections.evict(sessionID, because: error)
    }

    /// The metrics in Prometheus's text format, for `syncctl metrics` and the HTTP listener.
    package var metricsText: String { MetricsText.render(engine: engine, connections: clientCount) }

    package func run() async throws {
        let settings = configuration.settings
        let (connections, requests) = (self.connections, self.requests)
        let environment = ClientSession.Environment(
            engine: engine,
            settings: settings,
            transferDirectory: configuration.transferDirectory,
            logger: logger,
            connections: connections,
            startTime: configuration.startTime,
            readBackup: configuration.readBackup
        )
        let turns = TurnWrites.PerLoop(eventLoopGroup, engine: engine)
        let acceptor =
            switch configuration.listener {
            case .path(let path):
                try ConnectionAcceptor.listening(at: path, group: configuration.socketGroup, logger: logger)
            case .descriptor(let descriptor):
                try ConnectionAcceptor(adopting: descriptor, logger: logger)
            }
        onListening()

        // Serve until a graceful shutdown or cancellation stops accepting; then let each
        // connection answer the writes it already handed over (the engine shuts down after the
        // server, so they still commit) before it closes. Not reading, rather than shutting the
        // socket's input, keeps the client's own writes from failing early and taking the answers
        // down with its connection.
        let logger = self.logger
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await acceptor.run { [eventLoopGroup] descriptor in
                    ClientBootstrap(group: eventLoopGroup).channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            // Read now, so a reload applies to connections accepted afterwards.
                            let limits = settings.limits
                            try channel.syncOptions?.setOption(.writeBufferWaterMark, value: limits.outboundWatermarks)
                            try channel.pipeline.syncOperations.addHandler(
                                ConnectionHandler(
                                    environment: environment, turnWrites: turns.of(channel.eventLoop), registry: connections,
                                    requests: requests, limits: limits, descriptor: descriptor)
                            )
                        }
                    }.withConnectedSocket(descriptor).whenFailure { error in
                        logger.error("cannot serve a connection", metadata: ["error": "\(error)"])
                    }
                }
            } onGracefulShutdown: {
                acceptor.stop()
            }
        } onCancel: {
            acceptor.stop()
        }
        await connections.shutDown()
        // A backup or compaction a drained connection left behind must not outlive the engine.
        await requests.shutDown()
    }
}
