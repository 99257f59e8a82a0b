import Foundation
import SyncDaemon
import SyncEngine
import SyncSQLite
import Testing

/// A directory under the system's temporary directory, removed when the value goes away.
///
/// Every test that opens a database here does so inside one, so it also fails the test when SQLite
/// reported an API misuse (a closed or unopened connection used) while it existed.
final class TemporaryDirectory {
    let path: String
    private let misuseReportsBefore: Int

    init() throws {
        // Before any database opens: SQLite takes its error log only before its first use.
        SQLiteErrorLog.install()
        misuseReportsBefore = SQLiteErrorLog.misuseReports
        // Short, so socket paths inside stay under the 107-byte limit.
        path = "/tmp/ss-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { path + "/" + name }

    deinit {
        let misuses = SQLiteErrorLog.misuseReports - misuseReportsBefore
        #expect(misuses == 0, "SQLite reported \(misuses) API misuses (SQLITE_MISUSE) meanwhile; its log says where")
        try? FileManager.default.removeItem(atPath: path)
    }
}
