import Dependencies
import FeatureStore
import Foundation
import Logging
import SyncClient
import UnixSignals

/// Runs one feature as a process: connects to syncd, runs the feature's store with that
/// connection as `@Dependency(\.sharedState)`, and stops cleanly on SIGTERM or SIGINT.
///
/// ```swift
/// @main struct ThermostatProcess {
///     static func main() async throws {
///         try await FeatureHost(name: "thermostat").run(
///             initialState: Thermostat.State(target: 21),
///             reducer: { Thermostat() },
///             start: .start
///         )
///     }
/// }
/// ```
///
/// Every action is logged at debug level (`--log-level debug` in the examples, or
/// `SHAREDSTATE_LOG_LEVEL=debug`).
public struct FeatureHost: Sendable {
    /// Why ``run(initialState:reducer:start:stop:exitWhenIdle:)`` returned.
    public enum Ending: Sendable, Equatable {
        /// SIGTERM or SIGINT arrived.
        case signal(Int32)
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

    /// Creates a host for the feature process `name`.
    public init(name: String, socketPath: String? = nil, connectTimeout: Duration = .seconds(10), logLevel: Logger.Level? = nil) {
        self.name = name
        self.socketPath = socketPath
        self.connectTimeout = connectTimeout
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
    /// - Returns: Why it ended. A signal while still connecting ends it too, without running the
    ///   store.
    /// - Throws: ``SharedStateError`` `unavailable` when syncd does not answer within
    ///   ``connectTimeout``.
    @MainActor
    @discardableResult
    public func run<R: Reducer>(
        initialState: R.State,
        reducer: () -> R,
        start: R.Action? = nil,
        stop: R.Action? = nil,
        exitWhenIdle: Bool = false
    ) async throws -> Ending {
        let latch = SignalLatch()
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        let listener = Task {
            for await signal in signals { latch.fire(signal.rawValue) }
        }
        defer { listener.cancel() }

        guard let client = try await connect(unlessSignalled: latch) else {
            logger.info("stopping on signal \(latch.signal ?? 0) before connecting")
            return .signal(latch.signal ?? 0)
        }
        logger.info("connected to syncd at \(client.socketPath) as session \(client.sessionID)")
        let logger = self.logger
        let store = Store(initialState: initialState, reducer: { reducer().logActions(to: logger) }) {
            $0.sharedState = client
        }
        if let start { store.send(start) }

        let waitUntilIdle = store.idleWaiter()
        let ending = await withTaskGroup(of: Ending?.self) { group in
            group.addTask { await latch.wait().map(Ending.signal) }
            group.addTask {
                await client.waitUntilClosed()
                return .disconnected
            }
            if exitWhenIdle {
                group.addTask {
                    await waitUntilIdle()
                    return Task.isCancelled ? nil : .idle
                }
            }
            var ending: Ending = .idle
            for await first in group {
                if let first {
                    ending = first
                    break
                }
            }
            group.cancelAll()
            return ending
        }

        switch ending {
        case .signal(let number): logger.info("stopping on signal \(number)")
        case .idle: logger.info("finished: no work left")
        case .disconnected: logger.error("syncd closed the connection for good")
        }
        if let stop, ending != .disconnected {
            await store.send(stop).finish()
        }
        store.shutDown()
        await client.close()
        return ending
    }

    /// Connects to syncd, retrying while it is not up yet; nil once a signal arrived.
    private func connect(unlessSignalled latch: SignalLatch) async throws -> SharedStateClient? {
        var configuration = SharedStateClient.Configuration(socketPath: socketPath, clientName: name)
        configuration.reconnects = true
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: connectTimeout)
        var backoff = Backoff(initial: .milliseconds(20), maximum: .milliseconds(500))
        while latch.signal == nil {
            do {
                return try await SharedStateClient.connect(configuration)
            } catch {
                guard error.code == .unavailable, clock.now < deadline else { throw error }
                logger.debug("syncd is not answering yet at \(configuration.socketPath): \(error)")
                try await Task.sleep(for: backoff.next())
            }
        }
        return nil
    }
}
