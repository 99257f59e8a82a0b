import GRDB
import SharedStateWire

/// Reading the change log back (replays, history) and compacting it.
extension Storage {
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

    /// The changes of `key` in the change log, oldest first: the most recent `limit` (all with
    /// nil). Reads the log from the newest revision back, so it costs the length of the log.
    func history(of key: String, limit: Int?) async throws -> [Change] {
        try await pool.read { db in
            let rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT body FROM changes WHERE revision > (SELECT value FROM meta WHERE name = 'compacted_revision')
                    ORDER BY revision DESC
                    """
            )
            var found: [Change] = []
            while let row = try rows.next() {
                let revision = try CommittedRevision(logRecord: row[0])
                found.append(contentsOf: revision.changes.filter { $0.key == key })
                if let limit, found.count >= limit { break }
            }
            return found.reversed()
        }
    }

    /// Removes the change log up to and including `revision` and records it as compacted. Rows
    /// the `entries` table does not reflect yet stay until ``materialize()`` has written them;
    /// nothing reads them meanwhile.
    ///
    /// The rows go in transactions of `chunk` rows, so a large compaction never holds the
    /// database's write lock for long: commits, which may be made on an event loop, wait at most
    /// one chunk.
    func compact(through revision: UInt64, chunk: Int = 10_000) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE meta SET value = max(value, ?) WHERE name = 'compacted_revision'",
                arguments: [Int64(revision)]
            )
        }
        while true {
            let deleted = try await pool.write { db in
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
