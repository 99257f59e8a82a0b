import Foundation
import SyncEngine

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An exclusive lock on `<database>.lock`, held for the daemon's lifetime, so two syncd never
/// write the same database. The kernel drops it when the process dies, so it never goes stale.
///
/// A separate file, not the database: closing any descriptor of a SQLite file drops SQLite's own
/// POSIX locks on it.
public final class InstanceLock: Sendable {
    private let descriptor: Int32

    /// Takes the lock for `databasePath`.
    ///
    /// - Throws: ``DaemonStartError`` when another process holds it or the file cannot be opened.
    public init(databasePath: String) throws {
        let path = databasePath + ".lock"
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw DaemonStartError("cannot open lock file \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let reason = errno == EWOULDBLOCK ? "another syncd is using the database \(databasePath)" : String(cString: strerror(errno))
            close(descriptor)
            throw DaemonStartError("\(reason) (lock file \(path))")
        }
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }
}
