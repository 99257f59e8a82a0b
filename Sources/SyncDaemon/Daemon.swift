import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import SharedStateWire

/// syncd: opens the database, listens on the socket and serves clients until SIGTERM or SIGINT,
/// then stops accepting, commits what is queued and closes the database.
///
/// ```swift
/// let daemon = Daemon(configuration: .resolve(socketPath: nil, databasePath: nil, environment: env), logger: logger)
/// try await daemon.run()
/// ```
public final class Daemon: Sendable {
    /// What a started daemon reports once its socket accepts connections.
    public struct Readiness: Sendable {
        public var socketPath: String
        public var databasePath: String
        public var revision: UInt64
    }

    private let configuration: DaemonConfiguration
    private let logger: Logger
    private let startTime = ContinuousClock.now

    /// Creates a daemon; nothing happens until ``run(onReady:)``.
    public init(configuration: DaemonConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Starts syncd and serves until SIGTERM or SIGINT (a graceful shutdown) or until the task is
    /// cancelled (which ends with `CancellationError` after committing what was queued).
    ///
    /// - Parameter onReady: Called once, when the socket accepts connections.
    /// - Throws: ``DaemonStartError`` or ``StorageError`` when syncd cannot start; the message
    ///   names the file or socket at fault.
    public func run(onReady: @escaping @Sendable (Readiness) -> Void = { _ in }) async throws {
        let databasePath = configuration.databasePath
        try PrivateDirectory.createParent(of: databasePath, purpose: "database")
        let lock = try InstanceLock(databasePath: databasePath)
        // Released last, after the database is closed and the socket removed.
        defer { withExtendedLifetime(lock) {} }
        let storage = try Storage(path: databasePath, durability: configuration.durability)
        defer { try? storage.close() }
        let engine = try StateEngine(storage: storage, logger: logger)
        try SocketPreparation.prepare(configuration.socketPath)
        defer { unlink(configuration.socketPath) }

        let socketPath = configuration.socketPath
        let logger = self.logger
        let startTime = self.startTime
        let server = SocketServer(
            configuration: .init(socketPath: socketPath, limits: configuration.limits),
            engine: engine,
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
            logger: logger,
            status: { clients in
                let statistics = engine.statistics
                return .with {
                    $0.revision = statistics.revision
                    $0.keys = UInt64(statistics.keys)
                    $0.clients = UInt64(clients)
                    $0.watches = UInt64(statistics.watches)
                    $0.compactedRevision = statistics.compactedRevision
                    $0.databaseBytes = storage.fileSize
                    $0.uptimeSeconds = Self.seconds(ContinuousClock.now - startTime)
                    $0.serverVersion = WireProtocol.softwareVersion
                    $0.databasePath = databasePath
                }
            },
            onListening: {
                let revision = engine.revision
                logger.notice(
                    "syncd ready",
                    metadata: ["socket": "\(socketPath)", "database": "\(databasePath)", "revision": "\(revision)"]
                )
                onReady(Readiness(socketPath: socketPath, databasePath: databasePath, revision: revision))
            }
        )
        // Shutdown runs in reverse: the server stops first, then the engine commits what is queued.
        let group = ServiceGroup(
            configuration: .init(
                services: [
                    .init(service: engine),
                    .init(service: server),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint],
                cancellationSignals: [],
                logger: logger
            )
        )
        try await group.run()
        logger.notice("syncd stopped", metadata: ["revision": "\(engine.revision)"])
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
