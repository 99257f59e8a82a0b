import SharedStateWire

/// Everything syncd needs to know to start.
public struct DaemonConfiguration: Sendable {
    /// The Unix socket clients connect to.
    public var socketPath: String
    /// The SQLite database file.
    public var databasePath: String
    /// How hard each commit works before it is acknowledged.
    public var durability: Durability = .normal
    /// Size limits for keys, values and frames.
    public var limits: Limits = .default

    /// Creates a configuration with explicit paths.
    public init(socketPath: String, databasePath: String) {
        self.socketPath = socketPath
        self.databasePath = databasePath
    }

    /// The configuration from flags where given, else from the environment's defaults (see
    /// ``DefaultLocations``).
    public static func resolve(
        socketPath: String?,
        databasePath: String?,
        environment: [String: String]
    ) -> DaemonConfiguration {
        DaemonConfiguration(
            socketPath: socketPath ?? DefaultLocations.socketPath(environment: environment),
            databasePath: databasePath ?? DefaultLocations.databasePath(environment: environment)
        )
    }
}
