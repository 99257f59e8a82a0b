import GRDB
import SharedStateWire
import SyncEngine

/// A consistent copy of the database out, and the entries of such a copy back in.
package extension Storage {
    /// Writes a consistent copy of the database to `path` with SQLite's online backup (one step,
    /// under one read transaction), adds the journal's segments to its change log, and returns
    /// the revision it holds. The copy is one file: the rows that name sealed journals hold their
    /// records in it.
    func backup(to path: String) async throws -> UInt64 {
        // Taken before the database is read (see the change log's readers).
        let journaled = journaled.withLock { $0.map(\.segment) }
        let sealed = sealed
        let destination = try DatabaseQueue(path: path)
        defer { try? destination.close() }
        try await withReader { db in
            try destination.writeWithoutTransaction { copy in
                try db.backup(to: copy)
                // The copy holds every record itself: the rows that name sealed journals, which
                // stay here, are replaced by rows of their records, read while this snapshot is
                // held (a journal goes only a replacement after no row names it).
                try Self.inTransaction(copy) { copy in
                    let named = try Row.fetchCursor(
                        db, sql: "SELECT \(Self.logColumns) FROM changes WHERE journal_salt IS NOT NULL ORDER BY revision")
                    while let row = try named.next() {
                        let first = UInt64(bitPattern: row[0])
                        let last = UInt64(bitPattern: row[1])
                        let body = LogSegment.body(of: try Self.loggedRevisions(row, sealed: sealed))
                        try copy.execute(sql: "DELETE FROM changes WHERE revision = ?", arguments: [Int64(last)])
                        try Self.insertRows(of: [SegmentJournal.Segment(first: first, last: last, body: body)], copy)
                    }
                }
            }
        }
        return try await destination.write { db in
            let copied = try Self.lastRevision(db)
            try Self.insertRows(of: journaled.filter { $0.first > copied }, db)
            // The copy holds the journal's revisions itself and is continued by no journal: a
            // syncd started on it starts a new one.
            try db.execute(sql: "UPDATE meta SET value = 0 WHERE name IN ('journal_salt', 'journal_previous_salt', 'journal_base')")
            return try Self.lastRevision(db)
        }
    }

    /// The entries of a backup made by ``backup(to:)``, checked and brought to this schema. The
    /// file is modified by the migration: pass a copy.
    ///
    /// - Throws: `invalidArgument` when the file is not a syncd database, or is from a newer syncd.
    static func entries(inBackup path: String) throws(SharedStateError) -> [Entry] {
        SQLiteErrorLog.install()
        do {
            let queue = try DatabaseQueue(path: path)
            defer { try? queue.close() }
            let migrator = StorageMigrations.migrator
            let (applied, isSuperseded) = try queue.read { db in
                (try migrator.appliedIdentifiers(db), try migrator.hasBeenSuperseded(db))
            }
            guard let first = migrator.migrations.first, applied.contains(first) else {
                throw SharedStateError(.invalidArgument, "the file is not a syncd database")
            }
            if isSuperseded {
                throw SharedStateError(.invalidArgument, "the backup was written by a newer syncd")
            }
            try migrator.migrate(queue)
            return try queue.read { db in
                try readState(db, sealed: nil).entries.entries(withPrefix: "").map { $0.entry() }
            }
        } catch let error as SharedStateError {
            throw error
        } catch {
            throw SharedStateError(.invalidArgument, "the file is not a usable syncd backup: \(describe(error))")
        }
    }
}
