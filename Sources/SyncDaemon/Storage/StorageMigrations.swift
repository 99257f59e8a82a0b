import GRDB

/// The schema of syncd's database, as migrations that never change once released.
///
/// - `meta`: named integers (`revision`, `compacted_revision`).
/// - `entries`: the current value of every key, written in the same transaction as the changes
///   that produced it, so a restart loads them without replaying the log. `ephemeral_session` is
///   the session an ephemeral key is bound to (0: the key persists).
/// - `changes`: the change log, one row per revision (the integer primary key), holding every
///   change of that revision as one encoded `WatchEvent` message. Appending is the cheapest
///   insert SQLite has, and a replay decodes rows straight into the frames watchers receive.
enum StorageMigrations {
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
        return migrator
    }
}
