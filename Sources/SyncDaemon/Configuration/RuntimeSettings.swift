import Logging
import SharedStateWire
import Synchronization

/// The settings syncd may change while it runs (on SIGHUP): the log level and the limits. Every
/// part that uses them reads them here, so a reload needs no restart and drops no connection.
public final class RuntimeSettings: Sendable {
    private let state: Mutex<(logLevel: Logger.Level, limits: Limits)>

    /// Settings starting at `logLevel` and `limits`.
    public init(logLevel: Logger.Level, limits: Limits) {
        state = Mutex((logLevel, limits))
    }

    /// The lowest level that is logged.
    public var logLevel: Logger.Level {
        get { state.withLock { $0.logLevel } }
        set { state.withLock { $0.logLevel = newValue } }
    }

    /// The limits for requests; a new frame limit applies to connections accepted afterwards.
    public var limits: Limits {
        get { state.withLock { $0.limits } }
        set { state.withLock { $0.limits = newValue } }
    }
}
