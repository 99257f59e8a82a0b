import Logging
import SharedStateWire
import Synchronization

/// The settings syncd may change while it runs (on SIGHUP): the log level, the limits and the access
/// policy. Every part that uses them reads them here, so a reload needs no restart and drops no
/// connection.
public final class RuntimeSettings: Sendable {
    private let state: Mutex<(logLevel: Logger.Level, limits: Limits, policy: AccessPolicy, policyGeneration: UInt64)>

    /// Settings starting at `logLevel` and `limits`, with the policy of no policy file (only
    /// syncd's own user and root may do anything).
    public init(logLevel: Logger.Level, limits: Limits) {
        state = Mutex((logLevel, limits, .administratorsOnly(), 0))
    }

    /// Who may read and write which keys.
    package var policy: AccessPolicy {
        get { state.withLock { $0.policy } }
        set {
            state.withLock {
                $0.policy = newValue
                $0.policyGeneration &+= 1
            }
        }
    }

    /// The policy with a number that changes whenever it is replaced, so what was derived from
    /// it can be kept until then.
    var policyAndGeneration: (policy: AccessPolicy, generation: UInt64) {
        state.withLock { ($0.policy, $0.policyGeneration) }
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
