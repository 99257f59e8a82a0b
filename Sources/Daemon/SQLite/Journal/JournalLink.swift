import GRDB

/// What the database records of its segment journal, in its `meta` table: the database's own id,
/// and the salt and base revision of the journal that continues it (and of the one before, for a
/// move that finished in the database but not on the journal's side).
///
/// The journal's header records the same (``JournalHeader``): each names the other, so a
/// missing, foreign or older journal, or a database that went back behind its journal (its
/// `-wal` lost or damaged, an older copy put in its place), is found at start-up.
package struct JournalLink: Sendable, Equatable {
    /// The database's id, chosen when it was created (migration v6).
    package var databaseID: UInt64
    /// The salt of the journal that continues the database; 0 while none is linked (a database
    /// from before the link, or a backup copy).
    package var salt: UInt64
    /// The salt of the journal before it, while the current one may not be in place yet (a
    /// move committed, the journal not yet replaced); 0 once it is.
    package var previousSalt: UInt64
    /// The revision the current journal starts after.
    package var baseRevision: UInt64

    /// Whether a journal is linked: one must then be there.
    package var isLinked: Bool { salt != 0 }

    /// Reads the link from `db`'s `meta` table.
    static func read(_ db: Database) throws -> JournalLink {
        JournalLink(
            databaseID: try Storage.meta("database_id", db), salt: try Storage.meta("journal_salt", db),
            previousSalt: try Storage.meta("journal_previous_salt", db), baseRevision: try Storage.meta("journal_base", db))
    }

    /// Writes the link to `db`'s `meta` table, in the caller's transaction.
    func write(_ db: Database) throws {
        let statement = try db.cachedStatement(sql: "INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)")
        for (name, value) in [
            ("journal_salt", salt), ("journal_previous_salt", previousSalt), ("journal_base", baseRevision),
        ] {
            try statement.execute(arguments: [name, Int64(bitPattern: value)])
        }
    }

    /// The link to a new journal after `revision`, under a new salt; the current one becomes the
    /// previous.
    func succeeded(after revision: UInt64) -> JournalLink {
        var salt: UInt64 = 0
        while salt == 0 || salt == self.salt { salt = UInt64.random(in: .min ... .max) }
        return JournalLink(databaseID: databaseID, salt: salt, previousSalt: self.salt, baseRevision: revision)
    }

    /// The header of the journal this link names.
    func header(syncsEachAppend: Bool) -> JournalHeader {
        JournalHeader(
            salt: salt, databaseID: databaseID, baseRevision: baseRevision, bootID: JournalHeader.currentBootID,
            syncsEachAppend: syncsEachAppend)
    }
}
