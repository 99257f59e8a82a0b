import Foundation
import Logging
import SharedStateWire

/// Everything syncd needs to know to start.
public struct DaemonConfiguration: Sendable {
    /// The Unix socket clients connect to (unless systemd passes a listening socket).
    public var socketPath: String
    /// The SQLite database file.
    public var databasePath: String
    /// How hard each commit works before it is acknowledged.
    public var durability: Durability = .normal
    /// The group (a name or a number) whose members may connect to a socket syncd creates; the
    /// socket is mode 0660. nil leaves syncd's own group.
    public var socketGroup: String?
    /// The configuration file read at start and on SIGHUP, if any (see ``ConfigurationFile``).
    public var configurationFilePath: String?
    /// A log level from the command line; it wins over the configuration file's.
    public var logLevelOverride: Logger.Level?
    /// The limits before the configuration file's are applied.
    public var baseLimits: Limits = .default
    /// How many revisions the change log keeps before older ones are compacted; 0 keeps any number.
    public var retainedRevisions: UInt64 = 1_000_000
    /// How long the change log keeps a revision; nil keeps any age.
    public var retainedDuration: Duration?
    /// How often idle watches are told the current revision.
    public var progressInterval: Duration = .seconds(5)

    /// Creates a configuration with explicit paths.
    public init(socketPath: String, databasePath: String) {
        self.socketPath = socketPath
        self.databasePath = databasePath
    }

    /// The configuration from flags where given, else from the environment's defaults (see
    /// ``DefaultLocations``). The configuration file defaults to `$CONFIGURATION_DIRECTORY/syncd.json`
    /// when systemd sets that directory and the file exists.
    public static func resolve(
        socketPath: String?,
        databasePath: String?,
        configurationFilePath: String? = nil,
        environment: [String: String]
    ) -> DaemonConfiguration {
        var configuration = DaemonConfiguration(
            socketPath: socketPath ?? DefaultLocations.socketPath(environment: environment),
            databasePath: databasePath ?? DefaultLocations.databasePath(environment: environment)
        )
        if let configurationFilePath {
            configuration.configurationFilePath = configurationFilePath
        } else if let directory = environment["CONFIGURATION_DIRECTORY"]?.split(separator: ":").first {
            let candidate = String(directory) + "/syncd.json"
            if FileManager.default.fileExists(atPath: candidate) { configuration.configurationFilePath = candidate }
        }
        return configuration
    }

    /// The settings syncd starts with: the configuration file applied to the command line's.
    ///
    /// - Throws: ``DaemonStartError`` naming the file and the problem.
    public func makeSettings() throws(DaemonStartError) -> RuntimeSettings {
        let settings = RuntimeSettings(logLevel: logLevelOverride ?? .info, limits: baseLimits)
        try reload(into: settings)
        return settings
    }

    /// Reads the configuration file again and applies it to `settings`; on an error nothing
    /// changes.
    func reload(into settings: RuntimeSettings) throws(DaemonStartError) {
        guard let path = configurationFilePath else { return }
        let file = try ConfigurationFile.load(path: path)
        let limits = try file.applied(to: baseLimits, path: path)
        let fileLevel = try file.level(path: path)
        let level = logLevelOverride ?? fileLevel ?? .info
        settings.limits = limits
        settings.logLevel = level
    }
}
