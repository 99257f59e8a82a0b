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
            try destination.writeWithoutTransaction { try db.backup(to: $0) }
        }
        return try await destination.write { db in
            // The copy holds every record itself: the rows that name sealed journals, which stay
            // here, are replaced by rows of their records.
            let named = try Row.fetchAll(
                db, sql: "SELECT \(Self.logColumns), revision FROM changes WHERE journal_salt IS NOT NULL ORDER BY revision")
            for row in named {
                let segments = try Self.loggedRevisions(row, sealed: sealed)
                try db.execute(sql: "DELETE FROM changes WHERE revision = ?", arguments: [row[6] as Int64])
                try Self.insertRows(
                    of: [
                        SegmentJournal.Segment(
                            first: UInt64(bitPattern: row[0]), last: UInt64(bitPattern: row[1]), body: LogSegment.body(of: segments))
                    ], db)
            }
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
