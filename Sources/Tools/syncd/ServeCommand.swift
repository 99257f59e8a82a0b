import ArgumentParser
import Foundation
import Logging
import SyncDaemon
import SyncEngine
import SyncSQLite

/// `syncd serve`, also plain `syncd`: parses flags, sets up logging and runs the daemon.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Runs the daemon (what plain `syncd` does).",
        discussion: """
            Under systemd, syncd adopts a socket passed by a .socket unit, notifies READY=1, STATUS=, \
            WATCHDOG=1 and STOPPING=1, and logs in journald's format. SIGHUP re-reads the configuration \
            file; SIGTERM and SIGINT shut down cleanly.
            """
    )

    @Option(
        help: """
            The Unix socket to listen on. Default: $SYNCD_SOCKET, $RUNTIME_DIRECTORY/syncd.sock, \
            $XDG_RUNTIME_DIR/syncd/syncd.sock, or /tmp/syncd-$UID/syncd.sock.
            """
    )
    var socket: String?

    @Option(
        help: """
            The SQLite database. Default: $SYNCD_DATABASE, $STATE_DIRECTORY/state.sqlite, \
            $XDG_STATE_HOME/syncd/state.sqlite, or ~/.local/state/syncd/state.sqlite.
            """
    )
    var database: String?

    @Option(
        help: "A JSON configuration file (log level, limits), re-read on SIGHUP. Default: $CONFIGURATION_DIRECTORY/syncd.json if it exists."
    )
    var config: String?

    @Option(help: "The group (name or number) whose members may connect to the socket, which is mode 0660. Default: syncd's group.")
    var socketGroup: String?

    @Option(
        help: """
            A JSON access policy granting read and write per key prefix to users and groups, re-read on SIGHUP. \
            Without one only syncd's user and root may do anything. Default: $CONFIGURATION_DIRECTORY/policy.json if it exists.
            """
    )
    var policy: String?

    @Option(
        help: """
            normal: an acknowledged write survives any crash of syncd; a power cut can lose those of the last --sync-interval. \
            full: nothing acknowledged is ever lost (each commit waits for the disk).
            """
    )
    var durability: Durability = .normal

    @Option(help: "With --durability normal: the most seconds an acknowledged write may wait unsynced, what a power cut can lose at most.")
    var syncInterval: Double = 1

    @Option(help: "Serve Prometheus metrics at http://HOST:PORT/metrics (for example 127.0.0.1:9464). Default: off.")
    var metricsAddress: String?

    @Option(help: "trace, debug, info, notice, warning, error or critical; overrides the configuration file. Default: info.")
    var logLevel: Logger.Level?

    @Option(help: "How many revisions the change log keeps; older ones are compacted. 0 keeps any number.")
    var retainRevisions: UInt64 = 1_000_000

    @Option(help: "How many seconds the change log keeps a revision; older ones are compacted. 0 keeps any age.")
    var retainSeconds: Double = 0

    @Option(help: "Seconds between progress notices to idle watches.")
    var progressInterval: Double = 5

    @Option(
        help: """
            How many event loops (threads) serve the connections. Default: one per two cores, at least one \
            (\(DaemonConfiguration.defaultEventLoops) here).
            """
    )
    var eventLoops: Int?

    @Option(help: "Where the state is kept: sqlite (a database on this host, the default) or etcd (a cluster shared by several hosts).")
    var backend: String?

    @Option(help: "With --backend etcd: the cluster's client URLs, comma-separated (http://HOST:PORT).")
    var etcdEndpoints: String?

    @Option(help: "With --backend etcd: the prefix of syncd's keys in etcd. Default: /sharedstate/.")
    var etcdPrefix: String?

    @Option(help: "With --backend etcd: seconds a dead host's ephemeral keys outlive it (its sessions' lease TTL). Default: 5.")
    var etcdLeaseTtl: Int?

    @Option(
        help: """
            A private syncd in this directory, made if missing: its socket DIR/syncd.sock and database DIR/state.sqlite \
            (unless --socket or --database says otherwise). Prints how to point syncctl, the clients and the inspector at it.
            """
    )
    var directory: String?

    func validate() throws {
        if !(retainSeconds >= 0 && retainSeconds <= 100 * 365 * 86_400) {
            throw ValidationError("--retain-seconds must be between 0 (keep any age) and a century")
        }
        if !(progressInterval >= 0.01 && progressInterval <= 86_400) {
            throw ValidationError("--progress-interval must be between 0.01 and 86400 seconds")
        }
        if !(syncInterval >= 0.01 && syncInterval <= 3_600) {
            throw ValidationError("--sync-interval must be between 0.01 and 3600 seconds")
        }
        if let eventLoops, !(1...DaemonConfiguration.maxEventLoops).contains(eventLoops) {
            throw ValidationError("--event-loops must be between 1 and \(DaemonConfiguration.maxEventLoops)")
        }
    }

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        var socket = self.socket
        var database = self.database
        if let directory {
            let folder = URL(fileURLWithPath: directory).standardizedFileURL.path
            do {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            } catch {
                throw ValidationError("cannot make the directory \(folder): \(error.localizedDescription)")
            }
            socket = socket ?? folder + "/syncd.sock"
            database = database ?? folder + "/state.sqlite"
            Self.printHowToReach(socket: socket!, folder: folder)
        }
        var configuration = DaemonConfiguration.resolve(
            socketPath: socket,
            databasePath: database,
            configurationFilePath: config,
            policyFilePath: policy,
            environment: environment
        )
        configuration.durability = durability
        configuration.syncInterval = .milliseconds(Int64(syncInterval * 1000))
        configuration.metricsAddress = metricsAddress
        configuration.socketGroup = socketGroup
        // Files syncd creates (the database, its lock, transfers) are its user's alone.
        umask(0o077)
        configuration.logLevelOverride = logLevel
        configuration.retainedRevisions = retainRevisions
        configuration.retainedDuration = retainSeconds > 0 ? .milliseconds(Int64(retainSeconds * 1000)) : nil
        configuration.progressInterval = .milliseconds(Int64(progressInterval * 1000))
        if let eventLoops { configuration.eventLoops = eventLoops }
        // Every write is committed before it is answered: ending a shutdown that hangs loses nothing.
        configuration.shutdownDeadline = .seconds(10)
        do {
            let file = try configuration.configurationFilePath.map { path throws(DaemonStartError) in try ConfigurationFile.load(path: path)
            }
            configuration.backend = try BackendConfiguration.resolve(
                name: backend, endpoints: etcdEndpoints, prefix: etcdPrefix, leaseTTLSeconds: etcdLeaseTtl, file: file)
            let settings = try configuration.makeSettings()
            let isJournal = JournalLogHandler.isStandardErrorJournal(environment: environment)
            LoggingSystem.bootstrap { label in
                JournalLogHandler(label: label, settings: settings, isJournal: isJournal)
            }
            let logger = Logger(label: "syncd")
            try await Daemon(configuration: configuration, settings: settings, logger: logger, environment: environment).run()
            // What is left is the process's own exit: the same watch, until the process is gone.
            ShutdownWatchdog(exitsAfter: configuration.shutdownDeadline, logger: logger).arm(step: "exiting")
        } catch let error as DaemonStartError {
            Self.fail(error.message)
        } catch let error as StorageError {
            Self.fail(error.description)
        }
    }

    /// Prints `syncd: <message>` to standard error and exits with status 1.
    private static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("syncd: \(message)\n".utf8))
        Foundation.exit(1)
    }

    /// What `--directory` prints first: how every tool finds this syncd.
    private static func printHowToReach(socket: String, folder: String) {
        print(
            """
            A private syncd in \(folder). In another terminal:
              export SYNCD_SOCKET=\(socket)
                  # syncctl, the Swift and Python clients and feature processes then use this syncd
              syncctl watch ""          # every change, as it happens
              syncctl inspect --open    # the inspector, in a browser
            Ctrl-C stops it; its state stays in \(folder)/state.sqlite.
            """)
        fflush(nil)  // nil flushes every stream: a script reading this gets it now
    }
}

extension Durability: ExpressibleByArgument {}
extension Logger.Level: @retroactive ExpressibleByArgument {}
