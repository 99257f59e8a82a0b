import Foundation
import GRDB
import GRDBSQLite
import SharedStateWire
import SyncEngine
import Synchronization

/// The one owner of syncd's SQLite database: opens and migrates it, loads the state at start-up,
/// and commits each group of revisions.
///
/// A commit only appends the group to the ``SegmentJournal``, a file beside the database: one
/// `write` (and an `fdatasync` with `--durability full`, or when the journal went unsynced longer
/// than the sync interval), after a record of the writers new to this run (``JournalWriters``).
/// ``materialize(changedEntries:)`` brings the database up to date in batches (synced only when a
/// batch names a new journal): the journal's writers become rows of `sessions`, its segments rows
/// of `changes`, and the entries the engine's table marked changed are written to `entries` (a key
/// written a thousand times between two batches once); the journal is replaced by an empty one
/// past a size, at start-up and at a clean stop (`+Journal`). `entries` lets a restart start from
/// the current values instead of the whole log; ``load()`` replays the `changes` rows after
/// `entries_revision` and then the journal. Readers of the change log see the journal's segments
/// after the table's rows.
///
/// This file opens, loads, commits and materialises; `+Journal` finds, checks, syncs and replaces
/// the journal; `+ChangeLog` reads and compacts the log,
/// `+Backup` copies the database out and reads a copy back in, `+Checkpoint` keeps the
/// write-ahead log small.
package final class Storage: Sendable {
    /// When the entries changed by commits are written to the `entries` table.
    package struct MaterializationPolicy: Sendable {
        /// After this many revisions.
        var maxRevisions = 131_072
        /// Or this long after the first revision not yet materialised.
        var maxDelay: Duration = .seconds(1)
        /// The most bytes of a journal's records one transaction of the start-up move copies: a
        /// large journal found at start-up moves in several, so the write-ahead log never needs
        /// its size several times over at once. (A move while running names its synced records
        /// and copies only the few appended since the writer's last sync: one transaction.)
        var maxBytesPerTransaction = 8 << 20
        /// The journal's size past which a move replaces it by an empty one. Below it the journal
        /// keeps its moved records, which start-up skips: a replacement costs two syncs (the new
        /// file and its directory), which the commits would wait for at every move.
        var journalReplacementBytes: UInt64 = 32 << 20
    }

    /// The revisions committed since the `entries` table was last brought up to date: how many,
    /// the last, and since when. Which keys they changed, the engine's table knows
    /// (``EntryTable/changes``).
    private struct Unmaterialized {
        var revisions = 0
        var lastRevision: UInt64 = 0
        var since: ContinuousClock.Instant?
    }

    /// The connection ``checkpoint(restartFrames:)`` uses: opened on first use, and never again
    /// once the database is closed.
    enum Checkpointer {
        case notOpened
        case open(DatabaseQueue)
        case closed
    }

    /// The database file.
    let path: String
    /// What a commit survives; see ``Durability``.
    let durability: Durability
    /// The writer and the readers. Reached only through ``withWriter(_:)`` and ``withReader(_:)``,
    /// which refuse once ``close()`` has run instead of handing SQLite a closed connection.
    private let pool: DatabasePool
    let checkpointer = Mutex(Checkpointer.notOpened)
    private let materialization: MaterializationPolicy
    private let unmaterialized = Mutex(Unmaterialized())
    /// The last revision the change log holds (or `entries` reflects): the next commit starts
    /// after it.
    private let lastLogged = Mutex<UInt64>(0)
    /// Appends that synced the journal themselves because the writer's sync was late.
    let lateSyncs = Atomic<Int>(0)
    /// With `--durability normal`, the longest an acknowledged write may stay unsynced.
    let syncInterval: Duration
    /// Where commits go until ``materialize(changedEntries:)`` moves them into the `changes` table.
    let journal: SegmentJournal
    /// What the database records of the journal (see ``JournalLink``).
    let link: Mutex<JournalLink>
    /// The header of the journal that must replace the current one before the next append: the
    /// database names it already (a move committed, and replacing the journal failed).
    let pendingJournal = Mutex<JournalHeader?>(nil)
    /// Whether a replacement is pending or the previous journal not yet forgotten: what
    /// ``replacePendingJournal()`` has to do, read by every commit without a lock.
    let hasJournalWork = Atomic<Bool>(true)
    /// A commit group in the current journal: its segment, and where its record is.
    struct JournaledSegment: Sendable {
        var segment: SegmentJournal.Segment
        /// The journal's salt, and the record's offset in it.
        var salt: UInt64
        var offset: UInt64

        /// Where the record ends in the journal.
        var end: UInt64 { offset + UInt64(JournalScan.recordHeaderSize + segment.body.count) }
    }

    /// The journal's segments, in order, for readers of the change log: each is removed only once
    /// the `changes` table names it.
    let journaled: Mutex<[JournaledSegment]>
    /// The journals the `changes` table names, under their salts.
    let sealed: SealedJournals
    /// The sealed journals no row named at the last replacement: the next one removes them.
    let unnamedSealed = Mutex<Set<UInt64>>([])
    /// The writers the journal names that the `sessions` table does not hold yet: the next move
    /// inserts them.
    let journaledWriters = Mutex<[WriterIdentity]>([])
    /// What start-up did to the journal it found, when it did more than use it.
    package let journalRecovery: JournalRecoveryReport?

    /// Makes SQLite's `unix-excl` file system the process's default, once, before the first
    /// database opens. It locks a database file for the process that opens it, for as long as it
    /// has it open, and keeps the write-ahead log's index in that process's memory instead of the
    /// shared `-shm` file: connections within syncd share it as before, and a commit no longer
    /// takes and drops six `fcntl` locks on `-shm`, system calls into the kernel's lock code on
    /// every commit (D8). No other process can read the database while syncd has it open
    /// (SQLite answers "database is locked"): a copy is made with `syncctl backup`.
    ///
    /// SQLite's error log is installed first: SQLite takes it only before its first use, which
    /// looking up a file system is.
    private static let sqliteSetUpForThisProcess: Void = {
        SQLiteErrorLog.install()
        if let exclusive = sqlite3_vfs_find("unix-excl") { sqlite3_vfs_register(exclusive, 1) }
    }()

    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    ///
    /// - Throws: ``StorageError`` naming the file when it cannot be created, opened or migrated,
    ///   or when it was written by a newer syncd.
    /// - Parameter syncInterval: With `--durability normal`, the longest an acknowledged write may
    ///   stay in the journal unsynced (see ``SegmentJournal``).
    package init(
        path: String, durability: Durability, syncInterval: Duration = .seconds(1), materialization: MaterializationPolicy = .init()
    ) throws {
        precondition(syncInterval > .zero, "the sync interval must be positive")
        self.durability = durability
        self.syncInterval = syncInterval
        self.path = path
        self.materialization = materialization
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
        Self.sqliteSetUpForThisProcess
        var configuration = Configuration()
        configuration.label = "syncd"
        configuration.busyMode = .immediateError
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
        } catch {
            throw StorageError(path: path, message: "cannot open: \(Self.describe(error))")
        }
        do {
            // DatabasePool sets synchronous=NORMAL itself, after any prepareDatabase hook: apply
            // the durability setting afterwards, on the writer connection, and before anything is
            // written: with `full`, the schema and the link to the journal that start-up writes
            // must be synced before that journal is put in place (a power cut found it).
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = \(durability == .full ? "FULL" : "NORMAL")")
                // No automatic checkpoints: one stalls the commit that triggers it for
                // milliseconds. `checkpoint()` runs them off the commit path; the automatic one
                // stays only as a bound (65,536 pages) should that fall behind.
                try db.execute(sql: "PRAGMA wal_autocheckpoint = 65536")
                // A log that grew for one large transaction shrinks back to this at its next
                // reset, instead of keeping the disk space for good.
                try db.execute(sql: "PRAGMA journal_size_limit = \(64 << 20)")
            }
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(path: path, message: "cannot set the durability: \(Self.describe(error))")
        }
        do {
            let migrator = StorageMigrations.migrator
            let isSuperseded = try pool.read { try migrator.hasBeenSuperseded($0) }
            if isSuperseded {
                throw StorageError(path: path, message: "written by a newer syncd; its schema is unknown to this version")
            }
            try migrator.migrate(pool)
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(path: path, message: "cannot prepare the schema: \(Self.describe(error))")
        }
        let sealed = SealedJournals(journalPath: path + "-segments")
        self.sealed = sealed
        let problem: String?
        do {
            problem = try pool.read { db in try sealed.problem(db, database: path, excluding: try JournalLink.read(db).salt) }
        } catch {
            throw StorageError(path: path, message: "cannot read the change log: \(Self.describe(error))")
        }
        if let problem { throw StorageError(path: path, message: problem) }
        let opened = try Self.openJournal(
            of: path, pool: pool, durability: durability, syncInterval: syncInterval, chunkBytes: materialization.maxBytesPerTransaction)
        lastLogged.withLock { $0 = opened.revision }
        self.journal = opened.journal
        self.link = Mutex(opened.link)
        self.journaled = Mutex([])
        self.journalRecovery = opened.recovery
    }

    /// Reads every entry and the revisions; called once at start-up, before any commit.
    func load() throws -> StartingState {
        let segments = journaled.withLock { $0.map(\.segment) }
        let (loaded, replayed) = try withReader { db in
            let state = try Self.readState(db, then: segments, sealed: sealed, tracksChanges: true)
            let lastSessionID = try UInt64.fetchOne(
                db,
                sql: """
                    SELECT max(coalesce((SELECT max(session_id) FROM sessions), 0),
                               coalesce((SELECT max(ephemeral_session) FROM entries), 0),
                               coalesce((SELECT value FROM meta WHERE name = 'last_forgotten_session'), 0))
                    """
            )
            return (
                StartingState(
                    entries: state.entries, revision: state.revision, compactedRevision: try Self.meta("compacted_revision", db),
                    lastSessionID: lastSessionID ?? 0),
                state.replayed
            )
        }
        // What the log held beyond `entries` is written there with the next batch: the table
        // marked it changed.
        unmaterialized.withLock { pending in
            pending.revisions = replayed
            pending.lastRevision = loaded.revision
            if replayed > 0 { pending.since = .now }
        }
        return loaded
    }

    /// Commits consecutive revisions as one record of the journal (a ``LogSegment``), after a
    /// record of the writers it names that are new (``JournalWriters``; the next move inserts
    /// their `sessions` rows). Nothing of the group is kept if it throws.
    ///
    /// Synchronous: the caller waits for the commit. Calls to it and to ``materialize(changedEntries:)`` must
    /// not overlap: the engine makes them only while it holds the queue's right to commit.
    /// - Parameter segment: The group's records in the segment format, when the caller encoded
    ///   them together, framed as ``LogSegment/framing`` says; made from the revisions otherwise.
    func commit(_ revisions: [CommittedRevision], segment: Data? = nil, recording writers: [WriterIdentity] = []) throws {
        // The numbers only, read in place: a revision copied out retains its changes and record.
        guard !revisions.isEmpty else { return }
        let first = revisions[revisions.startIndex].revision
        let last = revisions[revisions.endIndex - 1].revision
        // Each revision in exactly one row: a row's revisions are found from its first and last.
        for index in revisions.indices.dropFirst() where revisions[index].revision &- revisions[index - 1].revision != 1 {
            throw StorageError(path: path, message: "a commit's revisions must be consecutive: \(revisions.map(\.revision))")
        }
        let logged = lastLogged.withLock { $0 }
        guard first == logged &+ 1 else {
            throw StorageError(path: path, message: "revision \(first) does not follow the change log's last, \(logged)")
        }
        guard journal.isOpen else { throw closedError }
        try replacePendingJournal()
        if !writers.isEmpty {
            // Before the revisions that name them: a writer whose revisions a crash lost only
            // takes a row of `sessions`.
            try journal.append(writers: writers)
            journaledWriters.withLock { $0 += writers }
        }
        let segment = SegmentJournal.Segment(first: first, last: last, body: segment ?? LogSegment.body(of: revisions))
        let appended = try journal.append(first: segment.first, last: segment.last, body: segment.body)
        if appended.syncedLate { lateSyncs.add(1, ordering: .relaxed) }
        Failpoint.journalAfterAppend.hit()
        journaled.withLock { $0.append(JournaledSegment(segment: segment, salt: appended.salt, offset: appended.offset)) }
        lastLogged.withLock { $0 = last }
        unmaterialized.withLock { pending in
            pending.revisions += revisions.count
            pending.lastRevision = last
            if pending.since == nil { pending.since = .now }
        }
    }

    /// When ``materialize(changedEntries:)`` is next due: the delay after the first change not yet written, or
    /// at once when enough revisions have piled up; nil when nothing waits for it.
    var materializationDeadline: ContinuousClock.Instant? {
        unmaterialized.withLock { pending in
            guard let since = pending.since else { return nil }
            // Due by count: as soon as possible.
            return pending.revisions >= materialization.maxRevisions ? since : since + materialization.maxDelay
        }
    }

    /// Whether enough revisions, or time, have gone by since the last ``materialize(changedEntries:)``.
    var isMaterializationDue: Bool {
        materializationDeadline.map { $0 <= .now } ?? false
    }

    /// Moves the journal's segments into the `changes` table and writes `changedEntries` (the
    /// entries changed since the last call that wrote them) to the `entries` table, in one
    /// transaction, so a restart replays no log before that point; replaces the journal when it
    /// grew past ``MaterializationPolicy/journalReplacementBytes`` (the transaction that names the
    /// new one is synced, and then removes the sealed journals no row names any more; the others
    /// are not synced: the journal keeps their records and its own sync keeps the promise). Call
    /// it only while no commit runs (the engine holds the right to commit). When it throws,
    /// nothing is lost: the journal still holds every change and the next call tries again.
    ///
    /// A segment whose record is synced moves as a reference (``SealedJournals``): the row names
    /// where it is in the journal and copies nothing. The few appended since the journal's last
    /// sync (the writer syncs right before a move) are copied into their row instead: a row never
    /// names what a power cut can take, and the move waits for no disk.
    ///
    /// Without `changedEntries` (a storage used without an engine, or closing), only the journal
    /// moves: `entries` stays as it was, and a restart replays the log after it.
    ///
    /// - Parameters:
    ///   - changedEntries: What the engine's table changed since it last forgot its changes
    ///     (``EntryTable/changes``); asked only when there is something to write.
    ///   - replacingJournal: Whether to replace the journal by an empty one even while it is
    ///     smaller than ``MaterializationPolicy/journalReplacementBytes`` (at a clean stop, when
    ///     no reader is left: every sealed journal no row names goes at once).
    /// - Returns: Whether it wrote what `changedEntries` gave.
    @discardableResult
    func materialize(changedEntries: (() -> ChangedEntries)? = nil, replacingJournal: Bool = false) throws -> Bool {
        try replacePendingJournal()
        let pending = unmaterialized.withLock { $0 }
        let segments = journaled.withLock { $0 }
        let insertsWriters = !journaledWriters.withLock { $0.isEmpty }
        let writesEntries = pending.since != nil && changedEntries != nil
        let journalSize = journal.size
        let replaces =
            journalSize >= materialization.journalReplacementBytes
            || replacingJournal && journalSize > UInt64(journal.header?.encodedSize ?? 0)
        guard writesEntries || !segments.isEmpty || insertsWriters || replaces else { return false }
        // The database names the journal that replaces this one in the transaction that moves
        // this one's last segments: whichever of the two a crash leaves, start-up recognises it.
        let current = link.withLock { $0 }
        let next = replaces ? current.succeeded(after: lastLogged.withLock { $0 }) : nil
        do {
            let synced = journal.syncedSize
            let salt = journal.header?.salt
            let named = segments.prefix { $0.salt == salt && $0.end <= synced }
            let references = Self.references(to: Array(named))
            // What is copied goes in transactions of at most `maxBytesPerTransaction` (a sync that
            // fails, a full disk: the tail may be large), each its own, the first with the
            // references and the writers, the last with the entries and the new journal's link.
            // A chunk moved stays moved; the journal keeps its records until it is replaced.
            let copied = segments[named.endIndex...].map(\.segment)
            let chunks =
                copied.isEmpty ? [[]] : LogSegment.chunks(of: copied, bytes: materialization.maxBytesPerTransaction).map(Array.init)
            for (index, chunk) in chunks.enumerated() {
                let isFirst = index == 0
                let isLast = index == chunks.count - 1
                try withWriter { db in
                    try moveJournaledWriters(if: isFirst && insertsWriters) { writers in
                        try Self.move(
                            chunk, references: isFirst ? references : [], writers: writers,
                            entries: isLast && writesEntries ? (changedEntries!(), pending.lastRevision) : nil, link: isLast ? next : nil,
                            db, durability)
                    }
                    if isLast, let next {
                        // Synced: what the rows name now is what a power cut leaves. A reader may
                        // still hold an older snapshot, unless syncd is stopping
                        // (`replacingJournal`). Failing here only leaves files to the next replacement.
                        let among = replacingJournal ? nil : unnamedSealed.withLock { $0 }
                        if let left = try? sealed.removeUnreferenced(db, keeping: [current.salt, next.salt], among: among) {
                            unnamedSealed.withLock { $0 = left }
                        }
                    }
                }
                // No commit runs meanwhile: the list only grows at its end, and not now.
                journaled.withLock { $0.removeFirst((isFirst ? named.count : 0) + chunk.count) }
            }
        } catch {
            // Not again at once: after as many revisions, or as long, as a batch waits.
            unmaterialized.withLock {
                $0.since = .now
                $0.revisions = 0
            }
            // A failed transaction (a full disk) leaves the write-ahead log at its high-water
            // size: give that space back, so that freeing space elsewhere lets the next try in.
            _ = try? withWriter { try $0.checkpoint(.truncate) }
            throw error
        }
        if writesEntries { unmaterialized.withLock { $0 = Unmaterialized() } }
        if !segments.isEmpty { Failpoint.moveAfterCommit.hit() }
        if let next {
            link.withLock { $0 = next }
            pendingJournal.withLock { $0 = next.header(syncsEachAppend: durability == .full) }
            hasJournalWork.store(true, ordering: .releasing)
            // Should it fail, the next commit tries again before it appends, and is refused
            // until it succeeds: an append to the old journal would be read as stale.
            try replacePendingJournal()
        }
        return writesEntries
    }

    /// The rows of `changes` that name `segments`' records where they are: consecutive records
    /// of one journal in runs of up to ``mergedRowBytes`` (a replay reads a run whole), each from
    /// the first record's start to the last one's end (the writers records between them
    /// included: readers skip them).
    static func references(to segments: [JournaledSegment]) -> [SealedJournals.Run] {
        var runs: [SealedJournals.Run] = []
        for segment in segments {
            if var run = runs.last, run.reference.salt == segment.salt, run.last &+ 1 == segment.segment.first,
                segment.end - run.reference.offset <= UInt64(mergedRowBytes)
            {
                run.last = segment.segment.last
                run.reference.length = segment.end - run.reference.offset
                runs[runs.count - 1] = run
            } else {
                runs.append(
                    SealedJournals.Run(
                        first: segment.segment.first, last: segment.segment.last,
                        reference: .init(salt: segment.salt, offset: segment.offset, length: segment.end - segment.offset)))
            }
        }
        return runs
    }

    /// Runs `move` with the writers the journal names and `sessions` does not hold yet (none
    /// unless `inserting`), and forgets them once it succeeded. On the writer's connection, as
    /// ``forgetSessions(_:throughSession:)`` is: a session forgotten meanwhile is not inserted
    /// again.
    private func moveJournaledWriters(if inserting: Bool, _ move: ([WriterIdentity]) throws -> Void) throws {
        let writers = inserting ? journaledWriters.withLock { $0 } : []
        try move(writers)
        guard !writers.isEmpty else { return }
        let inserted = Set(writers.map(ObjectIdentifier.init))
        journaledWriters.withLock { $0.removeAll { inserted.contains(ObjectIdentifier($0)) } }
    }

    /// The largest row of the `changes` table a segment is stored in whole.
    static let maxRowBytes = 256 << 20

    /// The most bytes of consecutive commit groups a move merges into one row of the `changes`
    /// table: large enough that a move inserts a few rows, small enough that a replay decodes
    /// little it does not send.
    static let mergedRowBytes = 1 << 20

    /// Moves `segments` (copied) and `references` (named where they are) into the `changes`
    /// table and the `sessions` rows of `writers`, writes `entries` to the `entries` table and
    /// `link` to `meta`, in one transaction on `db` (the writer's).
    static func move(
        _ segments: [SegmentJournal.Segment], references: [SealedJournals.Run] = [], writers: [WriterIdentity] = [],
        entries: (changed: ChangedEntries, through: UInt64)?, link: JournalLink?, _ db: Database, _ durability: Durability
    ) throws {
        // A move that names a new journal is synced even with `--durability normal`: the old
        // journal, and what it holds, goes once the transaction is in. Any other move is not:
        // the journal keeps its records, and syncing it keeps the promise (see SegmentJournal).
        let syncs = durability != .full && link != nil
        if syncs { try db.execute(sql: "PRAGMA synchronous = FULL") }
        defer { if syncs { try? db.execute(sql: "PRAGMA synchronous = NORMAL") } }
        try inTransaction(db) { db in
            for writer in writers {
                try db.cachedStatement(
                    sql: "INSERT OR IGNORE INTO sessions (session_id, client_name, pid, uid, gid) VALUES (?, ?, ?, ?, ?)"
                )
                .execute(arguments: [Int64(bitPattern: writer.session), writer.clientName, writer.pid, writer.uid, writer.gid])
            }
            try insertRows(of: references, db)
            try insertRows(of: segments, db)
            if !segments.isEmpty || !references.isEmpty { Failpoint.moveInTransaction.hit() }
            if let last = segments.last?.last ?? references.last?.last {
                try db.execute(sql: "UPDATE meta SET value = max(value, ?) WHERE name = 'revision'", arguments: [Int64(last)])
            }
            if let entries { try write(entries.changed, through: entries.through, db) }
            try link?.write(db)
        }
    }

    /// Writes `changed` to the `entries` table, which then reflects every revision up to
    /// `revision`, bound through the C API from the stored entries' own bytes.
    static func write(_ changed: ChangedEntries, through revision: UInt64, _ db: Database) throws {
        let delete = try db.cachedStatement(sql: "DELETE FROM entries WHERE key = ?")
        for key in changed.deletedKeys {
            try delete.execute(arguments: [key])
        }
        let upsert = try db.cachedStatement(
            sql: """
                INSERT INTO entries (key, value, version, create_revision, mod_revision, ephemeral_session)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (key) DO UPDATE SET value = excluded.value, version = excluded.version,
                    create_revision = excluded.create_revision, mod_revision = excluded.mod_revision,
                    ephemeral_session = excluded.ephemeral_session
                """
        ).sqliteStatement
        for entry in changed.entries {
            let code = entry.withKeyAndValueBytes { key, value in
                sqlite3_reset(upsert)
                // Static: the bytes outlive the step that reads them. A stored entry's buffers
                // always have an address, so an empty value is an empty blob, never NULL.
                sqlite3_bind_text(upsert, 1, UnsafeRawPointer(key.baseAddress!).assumingMemoryBound(to: CChar.self), Int32(key.count), nil)
                sqlite3_bind_blob(upsert, 2, value.baseAddress!, Int32(value.count), nil)
                sqlite3_bind_int64(upsert, 3, Int64(entry.version))
                sqlite3_bind_int64(upsert, 4, Int64(entry.createRevision))
                sqlite3_bind_int64(upsert, 5, Int64(entry.modRevision))
                sqlite3_bind_int64(upsert, 6, Int64(entry.ephemeralSession))
                defer { sqlite3_clear_bindings(upsert) }
                return sqlite3_step(upsert)
            }
            guard code == SQLITE_DONE else { throw error(code, db) }
        }
        try db.execute(
            sql: "UPDATE meta SET value = ? WHERE name IN ('revision', 'entries_revision')",
            arguments: [Int64(revision)]
        )
        // Compaction keeps the rows `entries` did not have yet; they may go now.
        try db.execute(
            sql: "DELETE FROM changes WHERE revision <= min(?, (SELECT value FROM meta WHERE name = 'compacted_revision'))",
            arguments: [Int64(revision)]
        )
    }

    /// Appends a row of the `changes` table for each segment, bound through the C API: GRDB's
    /// argument arrays cost more than the insert itself.
    ///
    /// Consecutive segments are merged into rows of up to ``mergedRowBytes``; a segment larger
    /// than ``maxRowBytes`` becomes several rows, split between its revisions:
    /// SQLite refuses a value of a billion bytes, and a group that could never be moved would
    /// hold the journal for good.
    static func insertRows(of segments: [SegmentJournal.Segment], _ db: Database) throws {
        guard !segments.isEmpty else { return }
        let handle = try db.cachedStatement(sql: "INSERT INTO changes (revision, first_revision, body) VALUES (?, ?, ?)").sqliteStatement
        // Taken out while the move runs; another storage's move meanwhile makes its own.
        var scratch = rowScratch.withLock { scratch in
            defer { scratch = [] }
            return scratch
        }
        defer { rowScratch.withLock { [scratch] in $0 = scratch } }
        try LogSegment.forEachRow(of: segments, mergedBytes: mergedRowBytes, maxBytes: maxRowBytes, scratch: &scratch) {
            first, last, body in
            guard body.count <= Int32.max else {
                throw StorageError(path: "", message: "revision \(first)'s record of \(body.count) bytes is too large for a row")
            }
            sqlite3_reset(handle)
            sqlite3_bind_int64(handle, 1, Int64(last))
            sqlite3_bind_int64(handle, 2, Int64(first))
            // Static: the bytes outlive the step that reads them.
            sqlite3_bind_blob(handle, 3, body.baseAddress, Int32(body.count), nil)
            defer { sqlite3_clear_bindings(handle) }
            let code = sqlite3_step(handle)
            guard code == SQLITE_DONE else { throw error(code, db) }
        }
    }

    /// Appends a row of the `changes` table for each run, naming where its records are.
    static func insertRows(of runs: [SealedJournals.Run], _ db: Database) throws {
        guard !runs.isEmpty else { return }
        let handle = try db.cachedStatement(
            sql: """
                INSERT INTO changes (revision, first_revision, body, journal_salt, journal_offset, journal_length)
                VALUES (?, ?, x'', ?, ?, ?)
                """
        ).sqliteStatement
        for run in runs {
            sqlite3_reset(handle)
            sqlite3_bind_int64(handle, 1, Int64(run.last))
            sqlite3_bind_int64(handle, 2, Int64(run.first))
            sqlite3_bind_int64(handle, 3, Int64(bitPattern: run.reference.salt))
            sqlite3_bind_int64(handle, 4, Int64(run.reference.offset))
            sqlite3_bind_int64(handle, 5, Int64(run.reference.length))
            let code = sqlite3_step(handle)
            guard code == SQLITE_DONE else { throw error(code, db) }
        }
    }

    /// The room merged rows are written in, kept from one move to the next (see
    /// ``LogSegment/forEachRow(of:mergedBytes:maxBytes:scratch:_:)``): at most ``mergedRowBytes``.
    private static let rowScratch = Mutex<[UInt8]>([])

    /// The entries as of the last revision the database holds: the `entries` table, then the log
    /// after `entries_revision` replayed over it, then `segments` (the journal's).
    ///
    /// With `tracksChanges`, the table it returns ``EntryTable/tracksChanges`` and has marked what
    /// the replayed revisions changed: what the `entries` table is behind by. `sealed`: where the
    /// rows that name journals find them (nil for a copy that holds every record itself).
    static func readState(
        _ db: Database, then segments: [SegmentJournal.Segment] = [], sealed: SealedJournals?, tracksChanges: Bool = false
    ) throws
        -> (entries: EntryTable, revision: UInt64, replayed: Int)
    {
        // Sized once: growing a table of a million entries rehashes it about twenty times.
        let builder = EntryTableBuilder(capacity: try Int.fetchOne(db, sql: "SELECT count(*) FROM entries") ?? 0)
        // A little over a batch: the row that fills it still fits, unless it is a large one.
        var batch = EncodedEntries(reservingBytes: Self.loadBatchBytes + (16 << 10))
        do {
            // Straight from SQLite's columns: with a million rows, GRDB's row decoding was most of
            // the start-up time.
            let statement = try db.makeStatement(
                // In key order (the primary key's, free): the table's key order is then built by appending.
                sql: "SELECT key, value, version, create_revision, mod_revision, ephemeral_session FROM entries ORDER BY key"
            )
            let handle = statement.sqliteStatement
            while true {
                let code = sqlite3_step(handle)
                if code == SQLITE_DONE { break }
                guard code == SQLITE_ROW else { throw error(code, db) }
                batch.append(
                    key: UnsafeBufferPointer(start: sqlite3_column_text(handle, 0), count: Int(sqlite3_column_bytes(handle, 0))),
                    value: UnsafeRawBufferPointer(start: sqlite3_column_blob(handle, 1), count: Int(sqlite3_column_bytes(handle, 1)))
                        .assumingMemoryBound(to: UInt8.self),
                    numbers: StoredEntry.Numbers(
                        version: UInt64(sqlite3_column_int64(handle, 2)),
                        createRevision: UInt64(sqlite3_column_int64(handle, 3)),
                        modRevision: UInt64(sqlite3_column_int64(handle, 4)),
                        ephemeralSession: UInt64(sqlite3_column_int64(handle, 5))
                    )
                )
                if batch.byteCount >= Self.loadBatchBytes {
                    // Indexed on the builder's thread while this one reads on.
                    builder.add(batch)
                    batch = EncodedEntries(reservingBytes: Self.loadBatchBytes + (16 << 10))
                }
            }
        } catch {
            _ = builder.finish()
            throw error
        }
        builder.add(batch)
        var entries = builder.finish()
        entries.tracksChanges = tracksChanges
        let entriesRevision = try meta("entries_revision", db)
        var revision = max(try meta("revision", db), entriesRevision)
        var replayedRevisions = 0
        let log = try Row.fetchCursor(
            db,
            sql: "SELECT \(logColumns) FROM changes WHERE revision > ? ORDER BY revision",
            arguments: [Int64(entriesRevision)]
        )
        while let row = try log.next() {
            for logged in try loggedRevisions(row, sealed: sealed) where logged.revision > entriesRevision {
                for change in logged.changes {
                    entries.set(change.key, to: change.type == .put ? StoredEntry.make(change.entry) : nil)
                }
                replayedRevisions += 1
                revision = max(revision, logged.revision)
            }
        }
        for segment in segments {
            for logged in try LogSegment.revisions(in: segment.body, first: segment.first, last: segment.last) {
                for change in logged.changes {
                    entries.set(change.key, to: change.type == .put ? StoredEntry.make(change.entry) : nil)
                }
                replayedRevisions += 1
                revision = max(revision, logged.revision)
            }
        }
        return (entries, revision, replayedRevisions)
    }

    /// How many bytes of entries start-up reads before it hands them to the table's builder.
    private static let loadBatchBytes = 512 << 10

    /// The last revision the database holds: the change log may hold revisions after the last
    /// one materialised.
    static func lastRevision(_ db: Database) throws -> UInt64 {
        max(try meta("revision", db), UInt64(try Int64.fetchOne(db, sql: "SELECT max(revision) FROM changes") ?? 0))
    }

    /// The columns of a change log row that ``loggedRevisions(_:sealed:)`` reads.
    static let logColumns = "coalesce(first_revision, revision), revision, body, journal_salt, journal_offset, journal_length"

    /// The revisions a change log row holds, selected with ``logColumns``, in order: from its
    /// body, or from the sealed journal it names.
    ///
    /// - Throws: ``StorageError`` when the journal it names is missing or damaged, or when it
    ///   names one and `sealed` is nil (a copy of the database must hold every record).
    static func loggedRevisions(_ row: Row, sealed: SealedJournals?) throws -> [CommittedRevision] {
        let first = UInt64(bitPattern: row[0])
        let last = UInt64(bitPattern: row[1])
        guard let salt = row[3] as Int64? else { return try LogSegment.revisions(in: row[2], first: first, last: last) }
        let reference = SealedJournals.Reference(
            salt: UInt64(bitPattern: salt), offset: UInt64(row[4] as Int64), length: UInt64(row[5] as Int64))
        guard let sealed else {
            throw StorageError(
                path: "", message: "revisions \(first)–\(last) are kept in a journal, which a copy of the database does not have")
        }
        return try sealed.segments(reference, first: first, last: last).flatMap {
            try LogSegment.revisions(in: $0.body, first: $0.first, last: $0.last)
        }
    }

    /// The size of the database and its write-ahead logs, in bytes.
    var fileSize: UInt64 { databaseFileSize + writeAheadLogSize }

    /// The database file's size in bytes, without its write-ahead logs.
    var databaseFileSize: UInt64 { Self.size(of: path) }

    /// The size of the write-ahead logs in bytes: SQLite's, the segment journal and the sealed
    /// journals the change log names.
    var writeAheadLogSize: UInt64 {
        Self.size(of: path + "-wal") + journal.size + sealed.size(excluding: journal.header?.salt)
    }

    private static func size(of file: String) -> UInt64 {
        (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)?.uint64Value ?? 0
    }

    /// The value of a PRAGMA on the connection that commits, for checks and diagnostics.
    func writerPragma(_ name: String) throws -> String? {
        try withWriter { db in
            try String.fetchOne(db, sql: "PRAGMA \(name)")
        }
    }

    /// Syncs the journal and materialises what is left, moves every committed page from the
    /// write-ahead log into the database file, empties the log, and closes the database. The file
    /// then holds every value (the change log's records stay in the journals its rows name), and
    /// the next start replays nothing.
    ///
    /// Afterwards every use of the database (a commit, a read, a checkpoint) throws a
    /// ``StorageError`` saying it is closed; a second close does nothing.
    package func close() throws {
        let checkpointer = checkpointer.withLock { checkpointer -> DatabaseQueue? in
            defer { checkpointer = .closed }
            if case .open(let queue) = checkpointer { return queue }
            return nil
        }
        try checkpointer?.close()
        let isClosed = pool.writeWithoutTransaction { $0.sqliteConnection == nil }
        if isClosed { return }
        // So that the last move names every record rather than copy those not yet synced (should
        // it fail, the move copies them).
        try? journal.sync()
        try materialize(replacingJournal: true)
        _ = try withWriter { try $0.checkpoint(.truncate) }
        try pool.close()
        journal.close()
    }

    // MARK: Reaching the connections

    /// Runs `body` on the writer connection, serialized with every other use of it and with
    /// ``close()``: once the database is closed it throws instead of running.
    func withWriter<T>(_ body: (Database) throws -> T) throws -> T {
        try pool.writeWithoutTransaction { db in
            try requireOpen(db)
            return try body(db)
        }
    }

    /// ``withWriter(_:)`` for a caller that may wait: the writer's queue runs `body`.
    func withWriter<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await pool.writeWithoutTransaction { db in
            try self.requireOpen(db)
            return try body(db)
        }
    }

    /// Runs `body` in one transaction on the writer connection (see ``withWriter(_:)``).
    func withWriterTransaction<T>(_ body: (Database) throws -> T) throws -> T {
        try withWriter { db in try Self.inTransaction(db, body) }
    }

    /// ``withWriterTransaction(_:)`` for a caller that may wait.
    func withWriterTransaction<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withWriter { db in try Self.inTransaction(db, body) }
    }

    /// `body`'s result, committed in one transaction (rolled back if it throws).
    static func inTransaction<T>(_ db: Database, _ body: (Database) throws -> T) throws -> T {
        var result: T?
        try db.inTransaction {
            result = try body(db)
            return .commit
        }
        return result!
    }

    /// Runs `body` in a read transaction on one of the readers; throws once the database is closed
    /// (GRDB refuses reads from a closed pool without reaching SQLite).
    func withReader<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try pool.read { db in
                // A read that took a reader just as the pool closed gets a closed one.
                try requireOpen(db)
                return try body(db)
            }
        } catch let error as DatabaseError where error.message == Self.closedByGRDB {
            throw closedError
        }
    }

    /// ``withReader(_:)`` for a caller that may wait.
    func withReader<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.read { db in
                try self.requireOpen(db)
                return try body(db)
            }
        } catch let error as DatabaseError where error.message == Self.closedByGRDB {
            throw closedError
        }
    }

    /// What GRDB says when a closed pool is read.
    private static let closedByGRDB = "Connection is closed"

    var closedError: StorageError { StorageError(path: path, message: "the database is closed") }

    /// Throws ``closedError`` when `db` was closed: SQLite must never see a closed handle.
    func requireOpen(_ db: Database) throws {
        if db.sqliteConnection == nil { throw closedError }
    }

    /// The error of a failed call to the C API, with SQLite's message.
    static func error(_ code: Int32, _ db: Database) -> DatabaseError {
        DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
    }

    static func meta(_ name: String, _ db: Database) throws -> UInt64 {
        let value = try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE name = ?", arguments: [name]) ?? 0
        // Salts and ids are stored by their bit pattern.
        return UInt64(bitPattern: value)
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? DatabaseError {
            return [error.message, error.resultCode.description].compactMap { $0 }.joined(separator: ": ")
        }
        return "\(error)"
    }
}
