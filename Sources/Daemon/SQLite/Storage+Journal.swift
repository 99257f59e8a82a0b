import Foundation
import GRDB
import SyncEngine

/// What start-up did to the segment journal it found, when it did more than use it.
package struct JournalRecoveryReport: Sendable {
    package enum Kind: Sendable {
        /// A torn end was cut: a record cut short or damaged, with nothing whole after it.
        case cutTornEnd
        /// A power cut's hole and what followed it were cut (see ``JournalRecovery``).
        case cutAfterPowerCut
    }

    package var kind: Kind
    /// The journal.
    package var journal: String
    /// Where it was cut, and how many bytes were cut off.
    package var offset: Int
    package var bytes: Int
    /// Where the bytes cut off are kept.
    package var keptAt: String
    /// The revisions of the whole records cut off with them (after a power cut).
    package var lostRevisions: ClosedRange<UInt64>?
}

/// The segment journal under the database: found and checked at start-up, synced within the
/// interval, replaced after each move.
extension Storage {
    /// The journal opened at start-up, the link the database records, and the last revision.
    struct OpenedJournal {
        var journal: SegmentJournal
        var link: JournalLink
        var revision: UInt64
        var recovery: JournalRecoveryReport?
    }

    /// Finds the journal beside the database at `path` and decides what to do with it
    /// (``JournalRecovery``). Revisions the journal holds beyond the database are moved into it
    /// at once, and the journal replaced by a new one that the database names: start-up ends
    /// with an empty journal, linked.
    ///
    /// - Throws: ``StorageError`` when the journal stops the start (the message names the file
    ///   and what is wrong), or cannot be read, cut or replaced.
    static func openJournal(
        of path: String, pool: DatabasePool, durability: Durability, syncInterval: Duration, chunkBytes: Int
    ) throws -> OpenedJournal {
        let journalPath = path + "-segments"
        let contents = try SegmentJournal.read(path: journalPath)
        let (link, inDatabase, named) = try read(pool, path: path) { db in
            (try JournalLink.read(db), try lastRevision(db), try contents.salt.flatMap { try SealedJournals.named(in: $0, db) })
        }
        let plan = JournalRecovery.plan(
            for: contents, journal: journalPath, database: path, link: link, databaseRevision: inDatabase,
            bootID: JournalHeader.currentBootID, named: named)
        var scan: JournalScan?
        var recovery: JournalRecoveryReport?
        switch plan {
        case .create, .replace:
            break
        case .use(let found):
            scan = found
        case .cutTornEnd(let found, let damage), .cutAfterPowerCut(let found, let damage):
            let keptAt = try SegmentJournal.cut(path: journalPath, at: damage.offset)
            let isPowerCut = if case .cutAfterPowerCut = plan { true } else { false }
            recovery = JournalRecoveryReport(
                kind: isPowerCut ? .cutAfterPowerCut : .cutTornEnd, journal: journalPath, offset: damage.offset, bytes: damage.bytes,
                keptAt: keptAt, lostRevisions: damage.followingRevisions)
            scan = found
        case .refuse(let problem):
            throw StorageError(path: path, message: problem.message)
        }
        // The rows name its records: it keeps them under its sealed name once a new journal
        // takes its place (a copy brought from elsewhere has no such name yet).
        if named != nil, let salt = contents.salt {
            try SealedJournals(journalPath: journalPath).seal(salt: salt)
        }
        let syncsEachAppend = durability == .full
        let interval = syncsEachAppend ? nil : syncInterval
        let segments = try scan.map { try Self.segments(of: $0.segments, after: inDatabase, in: journalPath) } ?? []
        // The journal names the boot it was started in, which tells a power cut's hole from damage
        // (JournalRecovery): one from an earlier boot is replaced, so the name stays this boot's.
        if let scan, segments.isEmpty, scan.segments.isEmpty, scan.writers.isEmpty, scan.header.version == 2, link.isLinked,
            scan.header.syncsEachAppend == syncsEachAppend, scan.header.bootID == JournalHeader.currentBootID
        {
            // The usual start: the journal the database names, empty.
            return OpenedJournal(
                journal: try SegmentJournal.open(path: journalPath, scan: scan, syncInterval: interval), link: link, revision: inDatabase,
                recovery: recovery)
        }
        // Anything else (records to move, a journal from before the link, none, one whose move
        // finished, one of the other durability mode or of an earlier boot) ends in a new journal
        // that the database names.
        let revision = segments.last?.last ?? inDatabase
        let next = link.succeeded(after: revision)
        do {
            // In chunks of copied records (``MaterializationPolicy/maxBytesPerTransaction``); the
            // last one, or none, records the new journal; the first inserts the writers it names.
            let chunks = LogSegment.chunks(of: segments, bytes: chunkBytes)
            let writers = scan?.writers ?? []
            for (index, chunk) in chunks.enumerated() {
                try pool.writeWithoutTransaction { db in
                    try move(
                        Array(chunk), writers: index == 0 ? writers : [], entries: nil, link: index == chunks.count - 1 ? next : nil, db,
                        durability)
                }
            }
            if chunks.isEmpty {
                try pool.writeWithoutTransaction { db in try move([], writers: writers, entries: nil, link: next, db, durability) }
            }
        } catch {
            throw StorageError(path: path, message: "cannot move the segment journal into the database: \(describe(error))")
        }
        // After the synced move that names the new journal: what the rows name now stays. A
        // failure only leaves files to the next replacement.
        _ = try? pool.writeWithoutTransaction { db in
            try SealedJournals(journalPath: journalPath).removeUnreferenced(db, keeping: [next.salt])
        }
        let journal = try SegmentJournal.create(
            path: journalPath, header: next.header(syncsEachAppend: syncsEachAppend), syncInterval: interval)
        var linked = next
        do {
            try pool.writeWithoutTransaction { db in try forgetPreviousJournal(db) }
            linked.previousSalt = 0
        } catch {
            // Left to the next replacement (see forgetPreviousJournal()).
        }
        return OpenedJournal(journal: journal, link: linked, revision: revision, recovery: recovery)
    }

    private static func read<T>(_ pool: DatabasePool, path: String, _ body: (Database) throws -> T) throws -> T {
        do {
            return try pool.read(body)
        } catch {
            throw StorageError(path: path, message: "cannot read the change log's last revision: \(describe(error))")
        }
    }

    /// The journal's segments after `revision`, the database's last: those the database holds
    /// already are left out, and the rest must follow it.
    ///
    /// - Throws: ``StorageError`` when they do not follow it: the journal is another database's.
    static func segments(
        of recovered: [SegmentJournal.Segment], after revision: UInt64, in journal: String
    ) throws(StorageError) -> [SegmentJournal.Segment] {
        let newer = recovered.drop { $0.last <= revision }
        if let first = newer.first, first.first != revision + 1 {
            throw StorageError(
                path: journal,
                message: """
                    holds revisions \(first.first)–\(newer.last!.last), which do not follow the database's last revision, \(revision): \
                    it belongs to another copy of the database (move it away to start from the database alone)
                    """)
        }
        return Array(newer)
    }

    /// Puts in place the journal the database names, when a move committed and replacing the
    /// journal failed.
    ///
    /// - Throws: ``StorageError`` while it still fails: nothing may be appended meanwhile.
    func replacePendingJournal() throws {
        // The common case, read without a lock on every commit: nothing pending.
        guard hasJournalWork.load(ordering: .acquiring) else { return }
        try pendingJournal.withLock { pending in
            guard let header = pending else { return }
            try journal.replace(with: header)
            pending = nil
        }
        try forgetPreviousJournal()
    }

    /// Records that the journal the database names is in place, once it is: a copy of the one
    /// before it is refused from then on (see ``JournalLink/previousSalt``). A failure leaves it
    /// to the next replacement; only such a copy put back by hand would go unnoticed meanwhile.
    private func forgetPreviousJournal() throws {
        guard link.withLock({ $0.previousSalt }) != 0 else {
            hasJournalWork.store(false, ordering: .releasing)
            return
        }
        try withWriter { db in try Self.forgetPreviousJournal(db) }
        link.withLock { $0.previousSalt = 0 }
        hasJournalWork.store(false, ordering: .releasing)
    }

    /// Clears the previous journal's salt in `db`'s `meta`.
    static func forgetPreviousJournal(_ db: Database) throws {
        try db.execute(sql: "UPDATE meta SET value = 0 WHERE name = 'journal_previous_salt'")
    }

    // MARK: Syncing within the interval

    /// When the journal should next be synced: half an interval after its oldest unsynced
    /// append, so that a sync that takes as long again still keeps the promise; nil while every
    /// append is synced.
    var journalSyncDeadline: ContinuousClock.Instant? {
        journal.unsynced.map { $0.since + syncInterval / 2 }
    }

    /// The store's maintenance between commits: the move into the database when it is due (or
    /// `isDue`: before the writer stops, so that `entries` holds every value and a restart
    /// replays nothing; the journal is synced first, so that the move names every record).
    /// Returns whether it wrote what `changedEntries` gave.
    ///
    /// - Throws: The move's error; nothing is lost (the journal keeps every record).
    func maintain(changedEntries: () -> ChangedEntries, isDue: Bool = false) throws -> Bool {
        guard isDue || isMaterializationDue else { return false }
        // Should it fail, the move copies what it cannot name.
        if isDue { try? journal.sync() }
        return try withoutActuallyEscaping(changedEntries) { try materialize(changedEntries: $0) }
    }

    /// The bytes of the journal's records not yet moved into the database.
    var unmovedBytes: UInt64 {
        journaled.withLock { $0.reduce(0) { $0 + UInt64($1.segment.body.count) } }
    }

    /// How many appends synced the journal themselves because the writer's sync was late.
    var lateJournalSyncs: Int { lateSyncs.load(ordering: .relaxed) }
}
