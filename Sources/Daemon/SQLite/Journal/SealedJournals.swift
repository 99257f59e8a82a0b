import Foundation
import GRDB

#if canImport(Glibc)
    import Glibc
#endif

/// The journal files that hold the change log's records, each under its salt:
/// `<database>-segments.<salt, 16 hex digits>`.
///
/// Every journal is given that name as well as `<database>-segments` when it is made (a second
/// link to the same file), so that replacing `<database>-segments` by a new journal leaves the
/// old one in place under its own name. A move into the database then inserts, for a run of
/// synced records, a row of `changes` that names the file, the offset and the length
/// (``Reference``) instead of a copy of the records: every acknowledged byte is written once, to
/// the journal, where a copy cost a write into SQLite's write-ahead log and another into the
/// database file. A file goes once no row names it (compaction released its revisions), after a
/// synced transaction of the database says so, and no reader can still need it
/// (``removeUnreferenced(_:keeping:among:)``).
package struct SealedJournals: Sendable {
    /// Where the records of a row of `changes` are: bytes `offset ..< offset + length` of the
    /// journal with `salt`, whole records (commit groups, and the writers records between them).
    package struct Reference: Sendable, Equatable {
        package var salt: UInt64
        package var offset: UInt64
        package var length: UInt64
    }

    /// A row of `changes` that names its records: revisions `first` through `last` at `reference`.
    package struct Run: Sendable, Equatable {
        package var first: UInt64
        package var last: UInt64
        package var reference: Reference
    }

    /// The current journal's path, `<database>-segments`; the sealed names add a suffix to it.
    package let journalPath: String

    package init(journalPath: String) {
        self.journalPath = journalPath
    }

    /// The name of the journal with `salt`.
    package func path(salt: UInt64) -> String {
        journalPath + "." + Self.hex(salt)
    }

    private static func hex(_ salt: UInt64) -> String {
        let digits = String(salt, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// The salt a file of the directory is named for, when it is one of these files.
    private func salt(ofFileNamed name: String) -> UInt64? {
        let prefix = (journalPath as NSString).lastPathComponent + "."
        guard name.hasPrefix(prefix) else { return nil }
        let suffix = name.dropFirst(prefix.count)
        guard suffix.count == 16 else { return nil }
        return UInt64(suffix, radix: 16)
    }

    /// The salts of the files there are.
    package func salts() throws -> [UInt64] {
        let directory = (journalPath as NSString).deletingLastPathComponent
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.isEmpty ? "." : directory)
        } catch {
            throw StorageError(path: directory, message: "cannot list the sealed journals: \(error.localizedDescription)")
        }
        return names.compactMap { salt(ofFileNamed: $0) }.sorted()
    }

    /// The bytes of the files there are, but the one with `salt` (the current journal's, counted
    /// as the journal).
    package func size(excluding salt: UInt64?) -> UInt64 {
        ((try? salts()) ?? []).reduce(0) { total, each in
            guard each != salt else { return total }
            var status = stat()
            return total + (stat(path(salt: each), &status) == 0 ? UInt64(status.st_size) : 0)
        }
    }

    /// Gives the journal at ``journalPath`` (with `salt`) its sealed name too, when it has not
    /// got it: a journal made before sealed names, or one whose name was not yet synced.
    ///
    /// - Throws: ``StorageError`` naming the file when the link cannot be made.
    package func seal(salt: UInt64) throws {
        try Self.link(journalPath, to: path(salt: salt))
    }

    /// Links `source` as `sealed` (a file already there is replaced: it can only be an unused
    /// one of the same salt) and syncs the directory, unless the caller syncs it next.
    static func link(_ source: String, to sealed: String, syncingDirectory: Bool = true) throws {
        if Glibc.link(source, sealed) != 0 {
            guard errno == EEXIST else { throw error(sealed, "cannot name", errno) }
            var existing = stat()
            var linked = stat()
            if stat(source, &linked) == 0, stat(sealed, &existing) == 0, existing.st_ino == linked.st_ino,
                existing.st_dev == linked.st_dev
            {
                return
            }
            // Replaced in one step: a name that is always there or always the old one.
            let fresh = sealed + ".new"
            _ = unlink(fresh)
            guard Glibc.link(source, fresh) == 0 else { throw error(sealed, "cannot name", errno) }
            guard rename(fresh, sealed) == 0 else {
                _ = unlink(fresh)
                throw error(sealed, "cannot name", errno)
            }
        }
        if syncingDirectory { try SegmentJournal.syncDirectory(of: sealed) }
    }

    // MARK: Reading

    /// The commit groups `reference` holds, in order, read from its file and checked record by
    /// record (the salt, the checksums, the revisions `first` through `last` without a gap).
    ///
    /// - Throws: ``StorageError`` naming the file, the offset and the revisions when the file is
    ///   missing or shorter, or a record is damaged.
    package func segments(_ reference: Reference, first: UInt64, last: UInt64) throws -> [JournalScan.Segment] {
        let file = path(salt: reference.salt)
        let descriptor = Glibc.open(file, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw StorageError(
                path: file,
                message: "holds revisions \(first)–\(last) of the change log and cannot be opened: \(String(cString: strerror(errno)))")
        }
        defer { _ = Glibc.close(descriptor) }
        var bytes = Data(count: Int(reference.length))
        var done = 0
        while done < bytes.count {
            let read = bytes.withUnsafeMutableBytes {
                pread(descriptor, $0.baseAddress! + done, $0.count - done, off_t(reference.offset) + off_t(done))
            }
            if read < 0, errno == EINTR { continue }
            guard read > 0 else {
                throw StorageError(
                    path: file,
                    message: """
                        holds revisions \(first)–\(last) of the change log at offset \(reference.offset) (\(reference.length) bytes), \
                        and \(read == 0 ? "ends before them" : "cannot be read: \(String(cString: strerror(errno)))")
                        """)
            }
            done += read
        }
        let segments = bytes.withUnsafeBytes { JournalScan.records(in: $0, salt: reference.salt) }
        let isExact =
            segments.wholeBytes == bytes.count && segments.segments.first?.first == first && segments.segments.last?.last == last
            && zip(segments.segments, segments.segments.dropFirst()).allSatisfy { $1.first == $0.last &+ 1 }
        guard isExact else {
            throw StorageError(
                path: file,
                message: """
                    holds revisions \(first)–\(last) of the change log at offset \(reference.offset) (\(reference.length) bytes), and \
                    the record at offset \(reference.offset + UInt64(segments.wholeBytes)) is damaged
                    """)
        }
        return segments.segments
    }

    // MARK: Checking and removing

    /// Where the records the rows of `changes` in `db` keep in the journal with `salt` end, and
    /// their revisions; nil when no row names it.
    static func named(in salt: UInt64, _ db: Database) throws -> JournalRecovery.NamedRecords? {
        guard
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT max(journal_offset + journal_length), min(coalesce(first_revision, revision)), max(revision)
                    FROM changes WHERE journal_salt = ?
                    """,
                arguments: [Int64(bitPattern: salt)]),
            let end = row[0] as Int64?
        else { return nil }
        return JournalRecovery.NamedRecords(end: Int(end), revisions: UInt64(row[1] as Int64)...UInt64(row[2] as Int64))
    }

    /// The first journal the rows of `changes` in `db` name that is missing or shorter than they
    /// need, but the one with `salt` (the current journal, which start-up checks with its
    /// records: ``JournalRecovery``), as a message naming it, its revisions and what to do; nil
    /// when every one is there.
    func problem(_ db: Database, database: String, excluding salt: UInt64) throws -> String? {
        for (named, file, size) in try journals(db) where named.salt != salt {
            guard size.map({ $0 < named.end }) ?? true else { continue }
            let what = size.map { "is \($0) bytes long, shorter than the \(named.end) bytes they need" } ?? "is missing"
            return """
                revisions \(named.first)–\(named.last) of its change log are kept in the journal \(file), which \(what): put it \
                back (the database's files are copied together: the database, its -wal, its -segments and every -segments.* file; \
                or copied live with `syncctl backup`), or restore a backup with `syncctl restore`; `syncd recover --database \
                \(database)` shows what starting without it would lose, and drops it with --drop
                """
        }
        return nil
    }

    /// Each journal the rows of `changes` in `db` name: its salt, first and last revision, the
    /// end of what they name; its file, and that file's size (nil: missing).
    private func journals(_ db: Database) throws -> [(
        named: (salt: UInt64, first: UInt64, last: UInt64, end: Int64), file: String, size: Int64?
    )] {
        try Row.fetchAll(
            db,
            sql: """
                SELECT journal_salt, min(coalesce(first_revision, revision)), max(revision), max(journal_offset + journal_length)
                FROM changes WHERE journal_salt IS NOT NULL GROUP BY journal_salt ORDER BY 2
                """
        ).map { row in
            let salt = UInt64(bitPattern: row[0])
            let file = path(salt: salt)
            var status = stat()
            let size = stat(file, &status) == 0 ? Int64(status.st_size) : nil
            return ((salt, UInt64(row[1] as Int64), UInt64(row[2] as Int64), row[3]), file, size)
        }
    }

    /// Deletes the rows of `changes` in `db` that name records their journal does not hold (it
    /// is missing, or ends before them), and records the change log as compacted through the
    /// last of them: a replay from before it is refused, never given a gap. In the caller's
    /// transaction. Returns the revisions of the rows deleted, nil when none.
    func dropRowsNamingWhatIsGone(_ db: Database) throws -> ClosedRange<UInt64>? {
        var dropped: ClosedRange<UInt64>?
        for (named, _, size) in try journals(db) {
            let kept = size ?? 0
            let gone = try Row.fetchOne(
                db,
                sql: """
                    SELECT min(coalesce(first_revision, revision)), max(revision) FROM changes
                    WHERE journal_salt = ? AND journal_offset + journal_length > ?
                    """,
                arguments: [Int64(bitPattern: named.salt), kept])
            guard let gone, let first = gone[0] as Int64?, let last = gone[1] as Int64? else { continue }
            try db.execute(
                sql: "DELETE FROM changes WHERE journal_salt = ? AND journal_offset + journal_length > ?",
                arguments: [Int64(bitPattern: named.salt), kept])
            let revisions = UInt64(first)...UInt64(last)
            dropped = dropped.map { min($0.lowerBound, revisions.lowerBound)...max($0.upperBound, revisions.upperBound) } ?? revisions
        }
        if let dropped {
            try db.execute(
                sql: "UPDATE meta SET value = max(value, ?) WHERE name = 'compacted_revision'", arguments: [Int64(dropped.upperBound)])
        }
        return dropped
    }

    /// Removes the files no row of `changes` in `db` names, but those of `keeping` and, when
    /// `among` is given, those not in it; syncs the directory. Call it right after a synced
    /// transaction on `db`, the writer's: what it reads is then what a power cut leaves.
    ///
    /// While syncd serves, a reader may still hold a snapshot from before the compaction that
    /// released a file: pass as `among` what the previous call left unnamed, so that a file goes
    /// one replacement after it was last named. With no reader (start-up, a clean stop), pass nil.
    ///
    /// - Returns: The files no row names that it left (for the next call's `among`).
    @discardableResult
    func removeUnreferenced(_ db: Database, keeping: Set<UInt64>, among: Set<UInt64>? = nil) throws -> Set<UInt64> {
        let present = Set(try salts()).subtracting(keeping)
        guard !present.isEmpty else { return [] }
        let referenced = Set(
            try Int64.fetchAll(db, sql: "SELECT DISTINCT journal_salt FROM changes WHERE journal_salt IS NOT NULL").map {
                UInt64(bitPattern: $0)
            })
        let unnamed = present.subtracting(referenced)
        var left = unnamed
        for salt in unnamed where among.map({ $0.contains(salt) }) ?? true {
            if unlink(path(salt: salt)) == 0 { left.remove(salt) }
        }
        if left.count < unnamed.count { try SegmentJournal.syncDirectory(of: journalPath) }
        return left
    }

    private static func error(_ path: String, _ what: String, _ code: Int32) -> StorageError {
        StorageError(path: path, message: "\(what) the sealed journal: \(String(cString: strerror(code)))")
    }
}
