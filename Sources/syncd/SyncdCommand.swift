import ArgumentParser
import Foundation
import Logging
import SyncDaemon

/// The `syncd` command: parses flags, sets up logging and runs the daemon.
@main
struct SyncdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncd",
        abstract: "The SharedState daemon: holds keyed shared state, persists it in SQLite and broadcasts every change."
    )

    @Option(
        help:
            "The Unix socket to listen on. Default: $SYNCD_SOCKET, $RUNTIME_DIRECTORY/syncd.sock, $XDG_RUNTIME_DIR/syncd/syncd.sock, or /tmp/syncd-$UID/syncd.sock."
    )
    var socket: String?

    @Option(
        help:
            "The SQLite database. Default: $SYNCD_DATABASE, $STATE_DIRECTORY/state.sqlite, $XDG_STATE_HOME/syncd/state.sqlite, or ~/.local/state/syncd/state.sqlite."
    )
    var database: String?

    @Option(help: "normal: commits survive any process crash; full: they also survive power loss (slower).")
    var durability: Durability = .normal

    @Option(help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .info

    func run() async throws {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "syncd")
        var configuration = DaemonConfiguration.resolve(
            socketPath: socket,
            databasePath: database,
            environment: ProcessInfo.processInfo.environment
        )
        configuration.durability = durability
        do {
            try await Daemon(configuration: configuration, logger: logger).run()
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
}

extension Durability: ExpressibleByArgument {}
extension Logger.Level: @retroactive ExpressibleByArgument {}
