import Dependencies
import FeatureStore
import Foundation
import Logging
import ServiceLifecycle
import SyncClient
import Synchronization

/// Runs one feature as a process: connects to syncd, runs the feature's store with that
/// connection as `@Dependency(\.sharedState)`, and stops cleanly on SIGTERM or SIGINT.
///
/// The feature runs as the one service of a service-lifecycle `ServiceGroup`, whose graceful
/// shutdown the signals trigger.
///
/// ```swift
/// @main struct ThermostatProcess {
///     static func main() {
///         FeatureHost(name: "thermostat").main(
///             initialState: Thermostat.State(target: 21),
///             reducer: { Thermostat() },
///             start: .start
///         )
///     }
/// }
/// ```
///
/// ``main(initialState:reducer:start:stop:exitWhenIdle:)`` runs the main actor on the thread
/// that reads syncd's socket (`MainEventLoop`) and exits when the feature ends;
/// ``run(initialState:reducer:start:stop:exitWhenIdle:)`` does the same work from any `async`
/// context, on whatever executor the main actor has.
///
/// Every action is logged at debug level (`--log-level debug` in the examples, or
/// `SHAREDSTATE_LOG_LEVEL=debug`); losing syncd, reconnecting and the presence put back at info.
public struct FeatureHost: Sendable {
    /// Why ``run(initialState:reducer:start:stop:exitWhenIdle:)`` returned.
    public enum Ending: Sendable, Equatable {
        /// SIGTERM or SIGINT arrived: its service group shut down gracefully.
        case shutdown
        /// Every effect finished (with `exitWhenIdle`).
        case idle
        /// The connection to syncd closed for good.
        case disconnected
    }

    /// The name syncd shows for this process (`syncctl clients`).
    public var name: String
    /// syncd's socket; nil for `$SYNCD_SOCKET` or the default.
    public var socketPath: String?
    /// How long to wait for syncd to answer at start.
    public var connectTimeout: Duration
    /// Where the host and the feature's actions are logged.
    public var logger: Logger
    /// The schemas syncd must hold before the feature starts (see `SchemaRequirement`).
    public var requiredSchemas: [SchemaRequirement]

    /// Creates a host for the feature process `name`.
    ///
    /// - Parameters:
    ///   - requiredSchemas: Schemas syncd must hold, each for its prefix, before the
    ///     feature's store starts: when one is missing or another, the process says so once and
    ///     ends, instead of failing to decode at the first change.
    ///   - name: The process's name: syncd's `clients`, its logs and each write's writer show it.
    ///   - socketPath: syncd's socket; nil for the default location (`SYNCD_SOCKET`, then the runtime directory).
    ///   - connectTimeout: How long to wait for syncd to answer before giving up.
    ///   - logLevel: The level of the host's log; nil for `SHAREDSTATE_LOG_LEVEL`, else `info`.
    public init(
        name: String, socketPath: String? = nil, connectTimeout: Duration = .seconds(10), logLevel: Logger.Level? = nil,
        requiring requiredSchemas: [SchemaRequirement] = []
    ) {
        self.name = name
        self.socketPath = socketPath
        self.connectTimeout = connectTimeout
        self.requiredSchemas = requiredSchemas
        var logger = Logger(label: name)
        let configured = ProcessInfo.processInfo.environment["SHAREDSTATE_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:))
        logger.logLevel = logLevel ?? configured ?? .info
        self.logger = logger
    }

    /// Connects, runs the feature until a signal (or, with `exitWhenIdle`, until its effects are
    /// done), and closes the connection, which removes this process's ephemeral keys.
    ///
    /// - Parameters:
    ///   - start: Sent once the store runs: where the feature starts its subscriptions.
    ///   - stop: Sent when the feature ends (on a signal, or when idle), before the store's
    ///     effects are cancelled; not sent when syncd closed the connection.
    ///   - exitWhenIdle: Return once no effect is running (a feature that does a job and ends).
    ///   - initialState: The state the feature starts in.
    ///   - reducer: Makes the feature's reducer, inside the host's dependencies.
    /// - Returns: Why it ended. A signal while still connecting ends it too, without running the
    ///   store.
    /// - Throws: `SharedStateError` `unavailable` when syncd does not answer within
    ///   ``connectTimeout``; `notFound` or `conflict` when syncd lacks one of
    ///   ``requiredSchemas`` or holds another (see `SharedStateBackend/requireSchema(_:)`).
    @MainActor
    @discardableResult
    public func run<R: Reducer>(
        initialState: R.State,
        reducer: @escaping () -> R,
        start: R.Action? = nil,
        stop: R.Action? = nil,
        exitWhenIdle: Bool = false
    ) async throws -> Ending {
        let ending = Mutex<Ending?>(nil)
        let hosted = HostedFeature(host: self) { @MainActor client in
            let logger = self.logger
            let store = Store(initialState: initialState, reducer: { reducer().logActions(to: logger) }) {
                $0.sharedState = client
            }
            if let start { store.send(start) }
            let result = await Self.waitForTheEnd(of: client, idle: exitWhenIdle ? store.idleWaiter() : nil)
            switch result {
            case .shutdown: logger.info("stopping on SIGTERM or SIGINT")
            case .idle: logger.info("finished: no work left")
            case .disconnected: logger.error("syncd closed the connection for good")
            }
            if let stop, result != .disconnected {
                await store.send(stop).finish()
            }
            store.shutDown()
            ending.withLock { $0 = result }
        }
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: hosted, successTerminationBehavior: .gracefullyShutdownGroup)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        try await group.run()
        return ending.withLock { $0 } ?? .shutdown
    }

    /// Waits for the first of: a graceful shutdown, the connection closing for good, and (with
    /// `idle`) the store running no effect.
    private static func waitForTheEnd(
        of client: SharedStateClient,
        idle: (@Sendable () async -> Void)?
    ) async -> Ending {
        await withTaskGroup(of: Ending?.self) { group in
            group.addTask {
                do {
                    try await gracefulShutdown()
                    return .shutdown
                } catch {
                    return Task.isCancelled ? nil : .shutdown
                }
            }
            group.addTask {
                await client.waitUntilClosed()
                return .disconnected
            }
            if let idle {
                group.addTask {
                    await idle()
                    return Task.isCancelled ? nil : .idle
                }
            }
            var ending: Ending = .shutdown
            for await first in group {
                if let first {
                    ending = first
                    break
                }
            }
            group.cancelAll()
            return ending
        }
    }

    /// Connects to syncd, retrying while it is not up yet; nil once a graceful shutdown began.
    fileprivate func connect() async throws -> SharedStateClient? {
        var configuration = SharedStateClient.Configuration(socketPath: socketPath, clientName: name)
        configuration.causeOfWrites = { EffectOrigin.current?.description() }
        configuration.reconnects = true
        // Losing syncd, reconnecting and presence put back are logged at info.
        configuration.logger = logger
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: connectTimeout)
        var backoff = Backoff(initial: .milliseconds(20), maximum: .milliseconds(500))
        while !Task.isShuttingDownGracefully {
            do {
                return try await SharedStateClient.connect(configuration)
            } catch {
                guard error.code == .unavailable, clock.now < deadline else { throw error }
                logger.debug("syncd is not answering yet at \(configuration.socketPath): \(error)")
                // A shutdown cuts the wait short.
                try? await cancelWhenGracefulShutdown { [backoff = backoff.next()] in try await Task.sleep(for: backoff) }
            }
        }
        return nil
    }
}

/// The feature as a service: connects, runs the store until ``FeatureHost/Ending``, closes the
/// connection (which removes this process's ephemeral keys).
private struct HostedFeature: Service {
    let host: FeatureHost
    let body: @MainActor @Sendable (SharedStateClient) async -> Void

    func run() async throws {
        guard let client = try await host.connect() else {
            host.logger.info("stopping on SIGTERM or SIGINT before connecting")
            return
        }
        host.logger.info("connected to syncd at \(client.socketPath) as session \(client.sessionID)")
        // Thrown, not logged: `main` says it once, on standard error.
        for requirement in host.requiredSchemas {
            do {
                try await client.requireSchema(requirement)
            } catch {
                await client.close()
                throw error
            }
        }
        await body(client)
        await client.close()
    }
}
