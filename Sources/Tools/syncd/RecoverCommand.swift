import ArgumentParser
import Foundation
import SyncDaemon
import SyncEngine
import SyncSQLite

/// `syncd recover`: says why a database does not start because of its segment journal and
/// exactly which acknowledged writes getting past it would drop; drops them only with `--drop`.
struct RecoverCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recover",
        abstract: "Shows why syncd refuses to start on a database's segment journal, and what dropping it would lose.",
        discussion: """
            syncd never drops an acknowledged write by itself: when the journal beside the database is damaged before \
            its end, missing, another database's, when it or a sealed journal (-segments.<salt>) ends before the \
            change log's records the database keeps there, or when the database went back behind it, syncd does not start. \
            This command prints what it found and the revisions (and keys) that getting past it would lose; with \
            --drop it does that, keeping what it cuts off or moves aside in files beside the journal. Run it while \
            syncd is stopped. Prefer restoring the files that belong together, or a backup (`syncctl restore`).
            """
    )

    @Option(
        help: """
            The SQLite database. Default: $SYNCD_DATABASE, $STATE_DIRECTORY/state.sqlite, \
            $XDG_STATE_HOME/syncd/state.sqlite, or ~/.local/state/syncd/state.sqlite.
            """
    )
    var database: String?

    @Flag(help: "Drop what is in the way, as the report says; without it nothing is changed.")
    var drop = false

    func run() throws {
        let path = DaemonConfiguration.resolve(socketPath: nil, databasePath: database, environment: ProcessInfo.processInfo.environment)
            .databasePath
        do {
            let lock = try InstanceLock(databasePath: path)
            defer { withExtendedLifetime(lock) {} }
            let repair = try JournalRepair(databasePath: path)
            print(repair.report)
            guard repair.isNeeded else { return }
            if drop {
                print(try repair.drop())
            } else {
                print("nothing was changed; run again with --drop to drop it")
                throw ExitCode(3)
            }
        } catch let error as StorageError {
            FileHandle.standardError.write(Data("syncd: \(error.description)\n".utf8))
            throw ExitCode.failure
        } catch let error as DaemonStartError {
            FileHandle.standardError.write(Data("syncd: \(error.message)\n".utf8))
            throw ExitCode.failure
        }
    }
}
