import GRDB

/// The schema of syncd's database, as migrations that never change once released.
///
/// - `changes`: the change log, one row per run of revisions (`first_revision` through the
///   integer primary key `revision`): either their records themselves (`body`, a ``LogSegment``),
///   or, with `journal_salt`, where they are in a sealed journal (``SealedJournals``). A move
///   appends to it: appending is the cheapest insert SQLite has.
/// - `entries`: the value of every key as of revision `entries_revision`, materialised from the
///   log in batches (see ``Storage/materialize(changedEntries:)``), so a restart loads them and replays only the
///   log after that revision. `ephemeral_session` is the session an ephemeral key is bound to (0:
///   the key persists).
/// - `sessions`: the connections that wrote, one row each (client name and the kernel's pid, uid,
///   gid), written with a session's first revision; each `changes` row names its session.
/// - `meta`: named integers: `revision` (the last revision materialised; the log may hold later
///   ones), `compacted_revision`, `entries_revision`, and the link to the segment journal
///   (`database_id`, `journal_salt`, `journal_previous_salt`, `journal_base`; see ``JournalLink``).
package enum StorageMigrations {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: entries, change log, meta") { db in
            try db.execute(
                sql: """
                    CREATE TABLE meta (
                        name TEXT PRIMARY KEY NOT NULL,
                        value INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    INSERT INTO meta (name, value) VALUES ('revision', 0), ('compacted_revision', 0);
                    CREATE TABLE entries (
                        key TEXT PRIMARY KEY NOT NULL,
                        value BLOB NOT NULL,
                        version INTEGER NOT NULL,
                        create_revision INTEGER NOT NULL,
                        mod_revision INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    CREATE TABLE changes (
                        revision INTEGER PRIMARY KEY NOT NULL,
                        body BLOB NOT NULL
                    );
                    """
            )
        }
        migrator.registerMigration("v2: ephemeral keys") { db in
            try db.execute(sql: "ALTER TABLE entries ADD COLUMN ephemeral_session INTEGER NOT NULL DEFAULT 0")
        }
        migrator.registerMigration("v3: entries materialised in batches") { db in
            // Until now every commit wrote `entries` too: they are current.
            try db.execute(sql: "INSERT INTO meta (name, value) SELECT 'entries_revision', value FROM meta WHERE name = 'revision'")
        }
        migrator.registerMigration("v4: writers of revisions") { db in
            // One row per session that wrote, when it first wrote; `changes` rows carry the session.
            try db.execute(
                sql: """
                    CREATE TABLE sessions (
                        session_id INTEGER PRIMARY KEY NOT NULL,
                        client_name TEXT NOT NULL,
                        pid INTEGER NOT NULL,
                        uid INTEGER NOT NULL,
                        gid INTEGER NOT NULL
                    );
                    """
            )
        }
        migrator.registerMigration("v5: change log in segments") { db in
            // A row holds the revisions of one commit group, `first_revision` through `revision`
            // (see LogSegment); NULL in the rows from before, which hold one revision each.
            try db.execute(sql: "ALTER TABLE changes ADD COLUMN first_revision INTEGER")
        }
        migrator.registerMigration("v6: the database and its journal name each other") { db in
            // See JournalLink: the id is this database's for good; the journal's salt and base
            // are written with each move. 0: no journal linked yet.
            try db.execute(
                sql: """
                    INSERT INTO meta (name, value) VALUES
                        ('database_id', (SELECT abs(random()) + 1)), ('journal_salt', 0), ('journal_previous_salt', 0), ('journal_base', 0)
                    """
            )
        }
        migrator.registerMigration("v7: the change log kept in sealed journals") { db in
            // A row with a salt holds no body: its revisions are the records at bytes
            // `journal_offset ..< journal_offset + journal_length` of that journal (see
            // SealedJournals); NULL in the rows that hold their records themselves.
            try db.execute(
                sql: """
                    ALTER TABLE changes ADD COLUMN journal_salt INTEGER;
                    ALTER TABLE changes ADD COLUMN journal_offset INTEGER;
                    ALTER TABLE changes ADD COLUMN journal_length INTEGER;
                    """)
        }
        return migrator
    }
}
