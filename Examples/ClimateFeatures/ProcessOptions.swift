import ArgumentParser
import Logging
import SharedState

/// The options every climate process takes.
public struct ProcessOptions: ParsableArguments {
    @Option(name: .long, help: "syncd's socket (default: $SYNCD_SOCKET, or the per-user default).")
    public var socket: String?

    @Option(name: .long, help: "trace, debug (every action), info, notice, warning, error or critical.")
    public var logLevel: String = "info"

    public init() {}

    public func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical; not \"\(logLevel)\"")
        }
    }

    /// The host for the process `name`.
    public func host(name: String) -> FeatureHost {
        FeatureHost(name: name, socketPath: socket, logLevel: Logger.Level(rawValue: logLevel))
    }
}
