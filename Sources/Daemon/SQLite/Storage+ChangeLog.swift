import GRDB
import SharedStateWire
import SyncEngine

/// Reading the change log back (replays, history) and compacting it.
///
/// The log is the `changes` table's rows, then the journal's segments (see ``Storage``). A reader
/// takes the segments before it reads the table: a segment leaves the journal only once the table
/// holds it, so between them the two hold every revision, and the table's copy of a revision
/// the reader also took from the journal is skipped.
package extension Storage {
    /// The change log's revisions after `revision` up to and including `lastRevision`, in order.
    func changes(after revision: UInt64, through lastRevision: UInt64) async throws -> [CommittedRevision] {
        let journaled = journaled.withLock { $0.map(\.segment) }
        let sealed = sealed
        return try await withReader { db in
            let rows = try Row.fetchCursor(
                db,
                sql: "SELECT \(Self.logColumns) FROM changes WHERE revision > ? ORDER BY revision",
                arguments: [Int64(revision)]
            )
            var result: [CommittedRevision] = []
            while let row = try rows.next(), UInt64(bitPattern: row[0]) <= lastRevision {
                result += try Self.loggedRevisions(row, sealed: sealed).filter { $0.revision > revision && $0.revision <= lastRevision }
            }
            let read = result.last?.revision ?? revision
            for segment in journaled where segment.last > read && segment.first <= lastRevision {
                result += try Self.revisions(of: segment).filter { $0.revision > read && $0.revision <= lastRevision }
            }
            return result
        }
    }

    /// The entry each of `keys` had at `revision`, from the latest change of it the change log
    /// holds up to there (nil: deleted then); keys the log does not show changing are left out.
    /// Reads the log from `revision` back until every key is found, so it may cost the length of
    /// the log.
    func entries(of keys: Set<String>, at revision: UInt64) async throws -> [String: Entry?] {
        guard !keys.isEmpty else { return [:] }
        let journaled = journaled.withLock { $0.map(\.segment) }
        let sealed = sealed
        return try await withReader { db in
            let compacted = try Self.meta("compacted_revision", db)
            var found: [String: Entry?] = [:]
            func look(at logged: CommittedRevision) {
                guard logged.revision <= revision, logged.revision > compacted else { return }
                for change in logged.changes.reversed() where keys.contains(change.key) && found[change.key] == nil {
                    found[change.key] = .some(change.type == .put ? change.entry : nil)
                }
            }
            for segment in journaled.reversed() where segment.first <= revision {
                for logged in try Self.revisions(of: segment).reversed() { look(at: logged) }
                if found.count == keys.count { return found }
            }
            let journalStart = journaled.first?.first ?? .max
            let rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT \(Self.logColumns) FROM changes
                    WHERE coalesce(first_revision, revision) <= ? AND revision > ?
                    ORDER BY revision DESC
                    """,
                arguments: [Int64(revision), Int64(compacted)]
            )
            while found.count < keys.count, let row = try rows.next() {
                for logged in try Self.loggedRevisions(row, sealed: sealed).reversed() where logged.revision < journalStart {
                    look(at: logged)
                }
            }
            return found
        }
    }

    /// The changes of `key` in the change log, oldest first: the most recent `limit` (all with
    /// nil). Reads the log from the newest revision back, so it costs the length of the log.
    func history(of key: String, limit: Int?) async throws -> [LoggedChange] {
        let journaled = journaled.withLock { $0.map(\.segment) }
        let sealed = sealed
        // Before the read: a move that inserts them into `sessions` afterwards is in what it reads.
        let journaledWriters = journaledWriters.withLock { $0 }
        return try await withReader { db in
            let compacted = try Self.meta("compacted_revision", db)
            var found: [LoggedChange] = []
            var sessions: Set<UInt64> = []
            /// Adds `revision`'s changes of `key`; false once `limit` are found.
            func look(at revision: CommittedRevision) -> Bool {
                guard revision.revision > compacted else { return true }
                // Newest first, so that the change log's order comes back with one reversal.
                for change in revision.changes.reversed() where change.key == key {
                    found.append(LoggedChange(change: change, writerSession: revision.writerSession, cause: revision.cause))
                    sessions.insert(revision.writerSession)
                }
                return limit.map { found.count < $0 } ?? true
            }
            let journalStart = journaled.first?.first ?? .max
            search: do {
                for segment in journaled.reversed() {
                    for revision in try Self.revisions(of: segment).reversed() {
                        if !look(at: revision) { break search }
                    }
                }
                let rows = try Row.fetchCursor(
                    db,
                    sql: "SELECT \(Self.logColumns) FROM changes WHERE revision > ? ORDER BY revision DESC",
                    arguments: [Int64(compacted)]
                )
                while let row = try rows.next() {
                    for revision in try Self.loggedRevisions(row, sealed: sealed).reversed() where revision.revision < journalStart {
                        if !look(at: revision) { break search }
                    }
                }
            }
            // Who the sessions were, recorded with their first revisions: in the journal, or
            // in the `sessions` table once moved.
            sessions.remove(0)
            var writers: [UInt64: WriterIdentity] = [:]
            for writer in journaledWriters where sessions.contains(writer.session) { writers[writer.session] = writer }
            for session in sessions where writers[session] == nil {
                guard
                    let row = try Row.fetchOne(
                        db, sql: "SELECT client_name, pid, uid, gid FROM sessions WHERE session_id = ?",
                        arguments: [Int64(bitPattern: session)])
                else { continue }
                writers[session] = WriterIdentity(session: session, clientName: row[0], pid: row[1], uid: row[2], gid: row[3])
            }
            return found.reversed().map { logged in
                var logged = logged
                logged.writer = writers[logged.writerSession]
                return logged
            }
        }
    }

    /// The revisions of one of the journal's segments.
    private static func revisions(of segment: SegmentJournal.Segment) throws -> [CommittedRevision] {
        try LogSegment.revisions(in: segment.body, first: segment.first, last: segment.last)
    }

    /// Removes the `sessions` rows of `sessions` and of every session up to `throughSession`,
    /// keeping the highest id removed in `meta` so that later runs still number theirs above it.
    func forgetSessions(_ sessions: [UInt64], throughSession: UInt64) throws {
        try withWriterTransaction { db in
            // Those not moved yet are not inserted by the next move (a start after a crash may
            // insert them again from the journal: the next forgetting of earlier runs takes them).
            let forgotten = Set(sessions)
            journaledWriters.withLock { $0.removeAll { $0.session <= throughSession || forgotten.contains($0.session) } }
            if throughSession > 0 {
                try db.execute(sql: "DELETE FROM sessions WHERE session_id <= ?", arguments: [Int64(bitPattern: throughSession)])
            }
            for session in sessions {
                try db.execute(sql: "DELETE FROM sessions WHERE session_id = ?", arguments: [Int64(bitPattern: session)])
            }
            try db.execute(
                sql: """
                    INSERT INTO meta (name, value) VALUES ('last_forgotten_session', ?)
                    ON CONFLICT (name) DO UPDATE SET value = max(value, excluded.value)
                    """,
                arguments: [Int64(bitPattern: max(throughSession, sessions.max() ?? 0))]
            )
        }
    }

    /// Removes the change log up to and including `revision` and records it as compacted. Rows
    /// the `entries` table does not reflect yet stay until ``materialize(changedEntries:)`` has written them;
    /// nothing reads them meanwhile.
    ///
    /// The rows go in transactions of `chunk` rows, so a large compaction never holds the
    /// database's write lock for long: commits, which may be made on an event loop, wait at most
    /// one chunk.
    func compact(through revision: UInt64, chunk: Int = 10_000) async throws {
        try await withWriterTransaction { db in
            try db.execute(
                sql: "UPDATE meta SET value = max(value, ?) WHERE name = 'compacted_revision'",
                arguments: [Int64(revision)]
            )
        }
        while true {
            Failpoint.compactionBeforeDelete.hit()
            let deleted = try await withWriterTransaction { db in
                try db.execute(
                    sql: """
                        DELETE FROM changes WHERE revision IN (
                            SELECT revision FROM changes
                            WHERE revision <= min(?, (SELECT value FROM meta WHERE name = 'entries_revision'))
                            ORDER BY revision LIMIT ?)
                        """,
                    arguments: [Int64(revision), chunk]
                )
                return db.changesCount
            }
            if deleted < chunk { return }
        }
    }
}
