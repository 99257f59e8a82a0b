import Foundation
import GRDB
import SharedStateWire
import Synchronization

/// The one owner of syncd's SQLite database: opens and migrates it, loads the state at start-up,
/// and commits each group of revisions in one transaction.
final class Storage: Sendable {
    /// What the database held when it was opened.
    struct LoadedState: Sendable {
        var entries: [String: Entry]
        var revision: UInt64
        var compactedRevision: UInt64
    }

    /// The database file.
    let path: String
    private let pool: DatabasePool
    /// The connection `checkpoint()` uses, opened on first use.
    private let checkpointer = Mutex<DatabaseQueue?>(nil)

    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    ///
    /// - Throws: ``StorageError`` naming the file when it cannot be created, opened or migrated,
    ///   or when it was written by a newer syncd.
    init(path: String, durability: Durability) throws {
        self.path = path
        do {
            try PrivateDirectory.createParent(of: path, purpose: "database")
        } catch {
            throw StorageError(path: path, message: error.message)
        }
        // The database holds every value: readable by syncd's user only. SQLite gives the -wal and
        // -shm files the database file's mode.
        if !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        for file in [path, path + "-wal", path + "-shm"] where FileManager.default.fileExists(atPath: file) {
            try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        }
        var configuration = Configuration()
        configuration.label = "syncd"
        configuration.busyMode = .immediateError
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
        } catch {
            throw StorageError(path: path, message: "cannot open: \(Self.describe(error))")
        }
        do {
            let migrator = StorageMigrations.migrator
            let isSuperseded = try pool.read { try migrator.hasBeenSuperseded($0) }
            if isSuperseded {
                throw StorageError(path: path, message: "written by a newer syncd; its schema is unknown to this version")
            }
            try migrator.migrate(pool)
            // DatabasePool sets synchronous=NORMAL itself, after any prepareDatabase hook: apply
            // the durability setting afterwards, on the writer connection.
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = \(durability == .full ? "FULL" : "NORMAL")")
                // No automatic checkpoints: one stalls the commit that triggers it for
                // milliseconds. `checkpoint()` runs them off the commit path; the automatic one
                // stays only as a bound (65,536 pages) should that fall behind.
                try db.execute(sql: "PRAGMA wal_autocheckpoint = 65536")
            }
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(path: path, message: "cannot prepare the schema: \(Self.describe(error))")
        }
    }

    /// Reads every entry and the revisions; called once at start-up.
    func load() throws -> LoadedState {
        try pool.read { db in
            var entries: [String: Entry] = [:]
            // Sized once: growing a dictionary of a million entries rehashes it about twenty times.
            entries.reserveCapacity(try Int.fetchOne(db, sql: "SELECT count(*) FROM entries") ?? 0)
            let rows = try Row.fetchCursor(
                db,
                sql: "SELECT key, value, version, create_revision, mod_revision, ephemeral_session FROM entries"
            )
            while let row = try rows.next() {
                let entry = Entry(
                    key: row[0],
                    value: row[1],
                    version: UInt64(row[2] as Int64),
                    createRevision: UInt64(row[3] as Int64),
                    modRevision: UInt64(row[4] as Int64),
                    ephemeralSession: UInt64(row[5] as Int64)
                )
                entries[entry.key] = entry
            }
            return LoadedState(
                entries: entries,
                revision: try Self.meta("revision", db),
                compactedRevision: try Self.meta("compacted_revision", db)
            )
        }
    }

    /// Commits consecutive revisions in one transaction: appends each to the change log, updates
    /// the entries they touch and the current revision. Nothing is written if it throws.
    ///
    /// Synchronous: the engine's writer thread calls it and waits for the commit.
    func commit(_ revisions: [CommittedRevision]) throws {
        guard let last = revisions.last else { return }
        try pool.write { db in
            let appendChange = try db.cachedStatement(sql: "INSERT INTO changes (revision, body) VALUES (?, ?)")
            let upsertEntry = try db.cachedStatement(
                sql: """
                    INSERT INTO entries (key, value, version, create_revision, mod_revision, ephemeral_session)
                    VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (key) DO UPDATE SET value = excluded.value, version = excluded.version,
                        create_revision = excluded.create_revision, mod_revision = excluded.mod_revision,
                        ephemeral_session = excluded.ephemeral_session
                    """
            )
            let deleteEntry = try db.cachedStatement(sql: "DELETE FROM entries WHERE key = ?")
            for revision in revisions {
                try appendChange.execute(arguments: [Int64(revision.revision), revision.logRecord])
                for change in revision.changes {
                    switch change.type {
                    case .put:
                        let entry = change.entry
                        try upsertEntry.execute(arguments: [
                            entry.key, entry.value, Int64(entry.version), Int64(entry.createRevision),
                            Int64(entry.modRevision), Int64(entry.ephemeralSession),
                        ])
                    case .delete:
                        try deleteEntry.execute(arguments: [change.key])
                    }
                }
            }
            try db.execute(sql: "UPDATE meta SET value = ? WHERE name = 'revision'", arguments: [Int64(last.revision)])
        }
    }

    /// Removes the change log up to and including `revision` and records it as compacted.
    func compact(through revision: UInt64) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM changes WHERE revision <= ?", arguments: [Int64(revision)])
            try db.execute(
                sql: "UPDATE meta SET value = max(value, ?) WHERE name = 'compacted_revision'",
                arguments: [Int64(revision)]
            )
        }
    }

    /// The changes of `key` in the change log, oldest first: the most recent `limit` (all with
    /// nil). Reads the log from the newest revision back, so it costs the length of the log.
    func history(of key: String, limit: Int?) async throws -> [Change] {
        try await pool.read { db in
            let rows = try Row.fetchCursor(db, sql: "SELECT body FROM changes ORDER BY revision DESC")
            var found: [Change] = []
            while let row = try rows.next() {
                let revision = try CommittedRevision(logRecord: row[0])
                found.append(contentsOf: revision.changes.filter { $0.key == key })
                if let limit, found.count >= limit { break }
            }
            return found.reversed()
        }
    }

    /// Writes a consistent copy of the database to `path` with SQLite's online backup (one step,
    /// under one read transaction) and returns the revision it holds.
    func backup(to path: String) async throws -> UInt64 {
        let destination = try DatabaseQueue(path: path)
        defer { try? destination.close() }
        try await pool.read { db in
            try destination.writeWithoutTransaction { try db.backup(to: $0) }
        }
        return try await destination.read { try Self.meta("revision", $0) }
    }

    /// The entries of a backup made by ``backup(to:)``, checked and brought to this schema. The
    /// file is modified by the migration: pass a copy.
    ///
    /// - Throws: `invalidArgument` when the file is not a syncd database, or is from a newer syncd.
    static func entries(inBackup path: String) throws(SharedStateError) -> [Entry] {
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
                try Row.fetchAll(db, sql: "SELECT key, value, version, create_revision, mod_revision, ephemeral_session FROM entries").map {
                    Entry(
                        key: $0[0],
                        value: $0[1],
                        version: UInt64($0[2] as Int64),
                        createRevision: UInt64($0[3] as Int64),
                        modRevision: UInt64($0[4] as Int64),
                        ephemeralSession: UInt64($0[5] as Int64)
                    )
                }
            }
        } catch let error as SharedStateError {
            throw error
        } catch {
            throw SharedStateError(.invalidArgument, "the file is not a usable syncd backup: \(describe(error))")
        }
    }

    /// The change log's revisions after `revision` up to and including `lastRevision`, in order.
    func changes(after revision: UInt64, through lastRevision: UInt64) async throws -> [CommittedRevision] {
        try await pool.read { db in
            let rows = try Row.fetchCursor(
                db,
                sql: "SELECT body FROM changes WHERE revision > ? AND revision <= ? ORDER BY revision",
                arguments: [Int64(revision), Int64(lastRevision)]
            )
            var result: [CommittedRevision] = []
            while let row = try rows.next() {
                result.append(try CommittedRevision(logRecord: row[0]))
            }
            return result
        }
    }

    /// The size of the database and its write-ahead log, in bytes.
    var fileSize: UInt64 {
        [path, path + "-wal"].reduce(0) { total, file in
            let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)?.uint64Value
            return total + (size ?? 0)
        }
    }

    /// The value of a PRAGMA on the connection that commits, for checks and diagnostics.
    func writerPragma(_ name: String) throws -> String? {
        try pool.writeWithoutTransaction { db in
            try String.fetchOne(db, sql: "PRAGMA \(name)")
        }
    }

    /// Copies committed pages from the write-ahead log into the database file without waiting for
    /// the writer or readers, on a connection of its own, so commits go on meanwhile. Once the log
    /// holds `restartFrames` pages that are all copied, restarts it from its beginning on the
    /// writer's connection (quick: nothing is left to copy), which is what keeps it small.
    /// Returns false when the database was busy and nothing was done.
    @discardableResult
    func checkpoint(restartFrames: Int = 8192) async throws -> Bool {
        let checkpointer = try checkpointConnection()
        let result = try await checkpointer.writeWithoutTransaction { db -> (walFrameCount: Int, checkpointedFrameCount: Int)? in
            do {
                return try db.checkpoint(.passive)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
                return nil
            }
        }
        guard let result else { return false }
        guard result.walFrameCount >= restartFrames, result.checkpointedFrameCount == result.walFrameCount else { return true }
        return try await pool.writeWithoutTransaction { db in
            do {
                _ = try db.checkpoint(.restart)
                return true
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
                return false
            }
        }
    }

    /// Moves every committed page from the write-ahead log into the database file, empties the
    /// log, and closes the database; later calls fail. The file alone then holds everything.
    func close() throws {
        try checkpointer.withLock { checkpointer in
            try checkpointer?.close()
            checkpointer = nil
        }
        _ = try pool.writeWithoutTransaction { try $0.checkpoint(.truncate) }
        try pool.close()
    }

    private func checkpointConnection() throws -> DatabaseQueue {
        try checkpointer.withLock { checkpointer in
            if let checkpointer { return checkpointer }
            var configuration = Configuration()
            configuration.label = "syncd-checkpoint"
            configuration.busyMode = .immediateError
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            checkpointer = queue
            return queue
        }
    }

    private static func meta(_ name: String, _ db: Database) throws -> UInt64 {
        let value = try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE name = ?", arguments: [name]) ?? 0
        return UInt64(value)
    }

    private static func describe(_ error: any Error) -> String {
        if let error = error as? DatabaseError {
            return [error.message, error.resultCode.description].compactMap { $0 }.joined(separator: ": ")
        }
        return "\(error)"
    }
}
