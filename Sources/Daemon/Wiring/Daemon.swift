import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import SharedStateWire
import SyncEngine
import SyncEtcd
import SyncSQLite
import SyncServer

/// syncd: opens the database, listens on the socket and serves clients until SIGTERM or SIGINT,
/// then stops accepting, commits what is queued and closes the database.
///
/// ```swift
/// let configuration = DaemonConfiguration.resolve(socketPath: nil, databasePath: nil, environment: environment)
/// let daemon = Daemon(configuration: configuration, settings: try configuration.makeSettings(), logger: logger)
/// try await daemon.run()
/// ```
///
/// Under systemd it adopts a listening socket passed with `LISTEN_FDS`, reports `READY=1`,
/// `STATUS=`, `WATCHDOG=1` and `STOPPING=1` to `$NOTIFY_SOCKET`, and reloads its configuration file on
/// SIGHUP without dropping connections.
public final class Daemon: Sendable {
    /// What a started daemon reports once its socket accepts connections.
    public struct Readiness: Sendable {
        public var socketPath: String
        public var databasePath: String
        public var revision: UInt64
    }

    private let configuration: DaemonConfiguration
    private let settings: RuntimeSettings
    private let environment: [String: String]
    private let logger: Logger
    private let startTime = ContinuousClock.now

    /// Creates a daemon; nothing happens until ``run(onReady:)``.
    ///
    /// - Parameter environment: Where systemd's variables are read from (`LISTEN_FDS`,
    ///   `NOTIFY_SOCKET`, `WATCHDOG_USEC`).
    public init(
        configuration: DaemonConfiguration,
        settings: RuntimeSettings,
        logger: Logger,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        self.configuration = configuration
        self.settings = settings
        self.environment = environment
        self.logger = logger
    }

    /// Starts syncd and serves until SIGTERM or SIGINT (a graceful shutdown) or until the task is
    /// cancelled (which ends with `CancellationError` after committing what was queued).
    ///
    /// - Parameter onReady: Called once, when the socket accepts connections.
    /// - Throws: ``DaemonStartError`` or ``StorageError`` when syncd cannot start; the message
    ///   names the file or socket at fault.
    public func run(onReady: @escaping @Sendable (Readiness) -> Void = { _ in }) async throws {
        guard (1...DaemonConfiguration.maxEventLoops).contains(configuration.eventLoops) else {
            throw DaemonStartError(
                "the number of event loops must be between 1 and \(DaemonConfiguration.maxEventLoops), not \(configuration.eventLoops)")
        }
        // Armed once serving ends: each step of the teardown below names itself, so a shutdown
        // that does not finish says where it waits (and, in syncd's own process, ends).
        let watchdog = ShutdownWatchdog(exitsAfter: configuration.shutdownDeadline, logger: logger)
        defer { watchdog.disarm() }
        let databasePath = configuration.databasePath
        try PrivateDirectory.createParent(of: databasePath, purpose: "database")
        let lock = try InstanceLock(databasePath: databasePath)
        // Released last, after the database is closed and the socket removed.
        defer {
            watchdog.arm(step: "releasing the instance lock")
            withExtendedLifetime(lock) {}
        }
        let engineConfiguration = StateEngine.Configuration(
            retainedRevisions: configuration.retainedRevisions,
            retainedDuration: configuration.retainedDuration,
            progressInterval: configuration.progressInterval
        )
        let engine: StateEngine
        var storage: Storage?
        var etcdBackend: EtcdBackend?
        switch configuration.backend {
        case .sqlite:
            let opened = try Storage(path: databasePath, durability: configuration.durability, syncInterval: configuration.syncInterval)
            storage = opened
            let backend = SQLiteBackend(storage: opened, logger: logger)
            engine = StateEngine(
                backend: backend, state: try backend.load(), configuration: engineConfiguration, delivery: ConnectionDelivery(),
                logger: logger)
            try engine.expireEphemeralKeysOfPreviousRun()
        case .etcd(let etcd):
            do {
                var backendConfiguration = try EtcdBackend.Configuration(
                    endpoints: etcd.endpoints, prefix: etcd.prefix, leaseTTLSeconds: etcd.leaseTTLSeconds,
                    retainedRevisions: configuration.retainedRevisions)
                backendConfiguration.ledger = LeaseLedger(databasePath: databasePath)
                let backend = try EtcdBackend(configuration: backendConfiguration, logger: logger)
                etcdBackend = backend
                engine = StateEngine(
                    backend: backend, state: try await backend.load(), configuration: engineConfiguration, delivery: ConnectionDelivery(),
                    logger: logger)
            } catch {
                let message = (error as? SharedStateError)?.message ?? "\(error)"
                throw DaemonStartError("\(message) (--etcd-endpoints \(etcd.endpoints.joined(separator: ",")))")
            }
        }
        defer {
            watchdog.arm(step: "closing the database")
            do { try storage?.close() } catch { logger.error("closing the database failed", metadata: ["error": "\(error)"]) }
        }
        TransferStore.removeLeftovers(in: (databasePath as NSString).deletingLastPathComponent)

        let listener: SocketServer.Listener
        let socketPath: String
        if let descriptor = try SocketActivation.passedSocket(environment: environment) {
            // systemd owns this socket: it is neither prepared nor removed here.
            listener = .descriptor(descriptor)
            socketPath = SocketActivation.path(of: descriptor) ?? "fd \(descriptor)"
        } else {
            socketPath = configuration.socketPath
            try SocketPreparation.prepare(socketPath)
            listener = .path(socketPath)
        }
        defer {
            watchdog.arm(step: "removing the socket")
            if case .path(let path) = listener { unlink(path) }
        }

        let eventLoops = MultiThreadedEventLoopGroup(numberOfThreads: configuration.eventLoops)
        // Its threads end once the server has closed every connection (when serving ends early).
        defer {
            watchdog.arm(step: "stopping the event loops")
            eventLoops.shutdownGracefully { _ in }
        }
        let notifier = SystemdNotifier(environment: environment)
        let server = makeServer(
            listener: listener, socketGroup: try Self.groupID(configuration.socketGroup), engine: engine, eventLoops: eventLoops
        ) {
            let revision = engine.revision
            self.logger.notice(
                "syncd ready",
                metadata: ["socket": "\(socketPath)", "database": "\(databasePath)", "revision": "\(revision)"]
            )
            notifier.ready(status: "revision \(revision), ready")
            onReady(Readiness(socketPath: socketPath, databasePath: databasePath, revision: revision))
        }
        etcdBackend?.whenASessionLosesItsLease { session in
            server.close(
                session: session,
                because: SharedStateError(
                    .unavailable,
                    "syncd could not reach etcd for longer than this session's lease lives: its ephemeral keys were deleted on every host; reconnect to put them back"
                ))
        }
        let systemd = SystemdIntegration(
            notifier: notifier,
            engine: engine,
            watchdogInterval: SystemdIntegration.watchdogInterval(environment: environment),
            logger: logger,
            status: { [weak server] in
                let statistics = engine.statistics
                return "revision \(statistics.revision), \(server?.clientCount ?? 0) clients, \(statistics.watches) watches"
            },
            reload: { [configuration, settings, logger, weak server] in
                do {
                    try configuration.reload(into: settings)
                    logger.notice("configuration reloaded", metadata: ["file": "\(configuration.configurationFilePath ?? "none")"])
                    let ended = server?.reapplyAccessPolicy() ?? 0
                    if ended > 0 { logger.notice("ended watches the new policy leaves nothing to read", metadata: ["watches": "\(ended)"]) }
                } catch {
                    logger.error("configuration not reloaded; the previous one stays in force", metadata: ["error": "\(error)"])
                }
            }
        )
        // Shutdown runs in reverse: STOPPING=1 first, then the server stops accepting and closes
        // its connections, then the engine commits what is queued.
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: engine), .init(service: server), .init(service: systemd),
        ]
        if let storage {
            services.append(.init(service: CheckpointService(storage: storage, interval: .milliseconds(500), logger: logger)))
        }
        if let address = configuration.metricsAddress {
            let metrics = try MetricsHTTPServer(address: address, text: { [weak server] in server?.metricsText ?? "" }, logger: logger)
            services.append(.init(service: metrics))
        }
        let group = ServiceGroup(
            configuration: .init(
                services: services,
                gracefulShutdownSignals: [.sigterm, .sigint],
                cancellationSignals: [],
                logger: logger
            )
        )
        try await group.run()
        watchdog.arm(step: "stopping the event loops")
        // Awaited here, not only started in the `defer`: then no thread of NIO's still runs
        // while the process exits.
        try? await eventLoops.shutdownGracefully()
        logger.notice("syncd stopped", metadata: ["revision": "\(engine.revision)"])
    }

    private func makeServer(
        listener: SocketServer.Listener,
        socketGroup: gid_t?,
        engine: StateEngine,
        eventLoops: any EventLoopGroup,
        onListening: @escaping @Sendable () -> Void
    ) -> SocketServer {
        let databasePath = configuration.databasePath
        let startTime = self.startTime
        return SocketServer(
            configuration: .init(
                listener: listener,
                settings: settings,
                transferDirectory: (databasePath as NSString).deletingLastPathComponent,
                socketGroup: socketGroup,
                startTime: startTime,
                readBackup: { path throws(SharedStateError) in try Storage.entries(inBackup: path) }
            ),
            engine: engine,
            eventLoopGroup: eventLoops,
            logger: logger,
            onListening: onListening
        )
    }

    /// The id of a group given by name or number.
    private static func groupID(_ group: String?) throws -> gid_t? {
        guard let group else { return nil }
        if let id = gid_t(group) { return id }
        guard let entry = getgrnam(group) else { throw DaemonStartError("unknown group \"\(group)\" (--socket-group)") }
        return entry.pointee.gr_gid
    }
}
