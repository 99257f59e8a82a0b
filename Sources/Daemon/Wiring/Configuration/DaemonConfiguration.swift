import Foundation
import Logging
import NIOCore
import SharedStateWire
import SyncEngine
import SyncSQLite
import SyncServer

/// Everything syncd needs to know to start.
public struct DaemonConfiguration: Sendable {
    /// The Unix socket clients connect to (unless systemd passes a listening socket).
    public var socketPath: String
    /// The SQLite database file; with the etcd backend, the lock that keeps two syncd off one
    /// socket, beside which transfers are kept.
    public var databasePath: String
    /// Where the state is kept.
    public var backend: BackendConfiguration = .sqlite
    /// How hard each commit works before it is acknowledged.
    public var durability: Durability = .normal
    /// With `--durability normal`, the longest an acknowledged write may stay unsynced: what a
    /// power cut can lose at most.
    public var syncInterval: Duration = .seconds(1)
    /// The group (a name or a number) whose members may connect to a socket syncd creates; the
    /// socket is mode 0660. nil leaves syncd's own group.
    public var socketGroup: String?
    /// The configuration file read at start and on SIGHUP, if any (see ``ConfigurationFile``).
    public var configurationFilePath: String?
    /// The access policy file read at start and on SIGHUP, if any; without one, only syncd's own
    /// user and root may do anything.
    public var policyFilePath: String?
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
    /// Where to serve `/metrics` over HTTP (`HOST:PORT`); nil serves nothing.
    public var metricsAddress: String?
    /// How many event loops (threads) serve the connections: ``defaultEventLoops`` unless set.
    public var eventLoops = DaemonConfiguration.defaultEventLoops
    /// How long syncd waits, after it has logged where its shutdown is stuck (5 s after it
    /// stopped serving), before it ends its process with status 1. nil waits for as long as it
    /// takes: a daemon running inside another program (a test) must not end that program.
    public var shutdownDeadline: Duration?

    /// One event loop per two cores, at least one (so one on a two-core machine).
    ///
    /// A revision committed on an event loop goes from there to the watchers of that loop's
    /// connections, and is handed to every other loop, waking its thread. On a small machine the
    /// wake-up costs more than the loop's own work for the write (BENCHMARKS.md, "Event loops"),
    /// and the cores are better left to the clients and to SQLite's writer.
    public static var defaultEventLoops: Int { max(1, System.coreCount / 2) }

    /// The most event loops syncd runs.
    public static let maxEventLoops = 256

    /// Creates a configuration with explicit paths.
    public init(socketPath: String, databasePath: String) {
        self.socketPath = socketPath
        self.databasePath = databasePath
    }

    /// The configuration from flags where given, else from the environment's defaults (see
    /// ``DefaultLocations``). The configuration and policy files default to
    /// `$CONFIGURATION_DIRECTORY/syncd.json` and `policy.json` when systemd sets that directory and
    /// the files exist.
    public static func resolve(
        socketPath: String?,
        databasePath: String?,
        configurationFilePath: String? = nil,
        policyFilePath: String? = nil,
        environment: [String: String]
    ) -> DaemonConfiguration {
        var configuration = DaemonConfiguration(
            socketPath: socketPath ?? DefaultLocations.socketPath(environment: environment),
            databasePath: databasePath ?? DefaultLocations.databasePath(environment: environment)
        )
        let directory = environment["CONFIGURATION_DIRECTORY"]?.split(separator: ":").first.map(String.init)
        func existing(_ name: String) -> String? {
            guard let directory, FileManager.default.fileExists(atPath: directory + "/" + name) else { return nil }
            return directory + "/" + name
        }
        configuration.configurationFilePath = configurationFilePath ?? existing("syncd.json")
        configuration.policyFilePath = policyFilePath ?? existing("policy.json")
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

    /// Reads the configuration and policy files again and applies them to `settings`; on an error
    /// in either, nothing changes.
    func reload(into settings: RuntimeSettings) throws(DaemonStartError) {
        var limits = baseLimits
        var level = logLevelOverride ?? .info
        if let path = configurationFilePath {
            let file = try ConfigurationFile.load(path: path)
            limits = try file.applied(to: baseLimits, path: path)
            let fileLevel = try file.level(path: path)
            level = logLevelOverride ?? fileLevel ?? .info
        }
        var policy = AccessPolicy.administratorsOnly()
        if let path = policyFilePath { policy = try AccessPolicy.load(path: path) }
        settings.limits = limits
        settings.logLevel = level
        settings.policy = policy
    }
}
