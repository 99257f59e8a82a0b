import Logging
import SharedStateWire
import Synchronization

/// The settings syncd may change while it runs (on SIGHUP): the log level, the limits and the access
/// policy. Every part that uses them reads them here, so a reload needs no restart and drops no
/// connection.
public final class RuntimeSettings: Sendable {
    private let state: Mutex<(logLevel: Logger.Level, limits: Limits, policy: AccessPolicy)>

    /// Settings starting at `logLevel` and `limits`, with the policy of no policy file (only
    /// syncd's own user and root may do anything).
    public init(logLevel: Logger.Level, limits: Limits) {
        state = Mutex((logLevel, limits, .administratorsOnly()))
    }

    /// Who may read and write which keys.
    var policy: AccessPolicy {
        get { state.withLock { $0.policy } }
        set { state.withLock { $0.policy = newValue } }
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
