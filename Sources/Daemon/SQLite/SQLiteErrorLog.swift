import GRDB
import Logging
import Synchronization

/// SQLite's own error log (`SQLITE_CONFIG_LOG`), sent to syncd's log with each report's code, and
/// counted, so that an error SQLite only mentions to itself cannot go unseen.
///
/// SQLite reports here what its callers may never see, or see without detail: an API misuse
/// (`SQLITE_MISUSE`, 21: a closed or unopened connection used, a statement used from two
/// threads), a corrupt page, an I/O error with its `errno`, a write-ahead log recovered after a
/// crash. A misuse is always a bug in syncd, logged as critical; the tests fail any test during
/// which one was reported. Trouble with the database or the machine is an error; errors SQLite
/// returns to a caller that answers them (a busy database, a missing table the migrator probes
/// for) are logged at debug level.
///
/// SQLite takes the callback only before its first use in the process: ``install()`` runs before
/// anything in syncd touches SQLite (see ``Storage``).
public enum SQLiteErrorLog {
    private static let counts = Mutex<[Int32: Int]>([:])

    private static let installation: Void = {
        Database.logError = { resultCode, message in
            report(code: resultCode.rawValue, message: message)
        }
    }()

    /// Installs the callback, once per process; later calls do nothing.
    public static func install() {
        installation
    }

    /// How many reports SQLite has made in this process with `code` as their primary result code
    /// (`SQLITE_MISUSE` is 21).
    public static func reports(ofPrimaryCode code: Int32) -> Int {
        counts.withLock { $0[code, default: 0] }
    }

    /// How many API misuses SQLite has reported in this process: always a bug.
    public static var misuseReports: Int { reports(ofPrimaryCode: misuse) }

    private static let misuse: Int32 = 21
    private static let notice: Int32 = 27
    private static let warning: Int32 = 28
    /// The database or the machine is in trouble: a corrupt page, a failed read or write, a full
    /// disk, no memory. The caller gets the error too, but not SQLite's detail of it.
    private static let trouble: Set<Int32> = [7, 10, 11, 13]

    private static let logger = Logger(label: "syncd.sqlite")

    /// Counts and logs one report. SQLite may call it from any thread, and it must not call SQLite.
    static func report(code: Int32, message: String) {
        let primary = code & 0xff
        counts.withLock { $0[primary, default: 0] += 1 }
        let metadata: Logger.Metadata = ["code": "\(code)", "message": "\(message)"]
        switch primary {
        case misuse:
            logger.critical("SQLite error: API misuse, a bug in syncd", metadata: metadata)
        case _ where trouble.contains(primary):
            logger.error("SQLite error", metadata: metadata)
        case notice:
            // A write-ahead log recovered after a crash, for example: worth knowing, not wrong.
            logger.notice("SQLite notice", metadata: metadata)
        case warning:
            logger.warning("SQLite warning", metadata: metadata)
        default:
            // An error SQLite returns to its caller, which answers it (a missing table probed by
            // the migrator, a busy database, a file that is not a database): the log only adds
            // SQLite's detail, for whoever looks at debug level.
            logger.debug("SQLite reported an error to its caller", metadata: metadata)
        }
    }
}
