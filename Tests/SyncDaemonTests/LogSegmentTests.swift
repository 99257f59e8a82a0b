import Foundation
import GRDB
import SharedStateWire
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

/// The change log keeps a commit group in one row (``LogSegment``): the row's bytes are the
/// schema's `LogSegment`, every reader of the log sees each revision as before, compaction in the
/// middle of a row hides what it compacted, rows from before segments read as they are, and a
/// damaged row is named, never a crash.
@Suite struct LogSegmentTests {
    private func revision(_ number: UInt64, _ key: String, _ json: String, session: UInt64 = 0, cause: String = "") -> CommittedRevision {
        let entry = Entry(key: key, value: Data(json.utf8), version: number, createRevision: 1, modRevision: number)
        let writer = WriterIdentity(session: session, clientName: "c\(session)", pid: 1, uid: 0, gid: 0)
        return CommittedRevision(
            revision: number, changes: [.put(entry)], origin: WriteOrigin(writer: session == 0 ? nil : writer, cause: cause))
    }

    private func rows(_ path: String) throws -> [(first: Int64?, last: Int64)] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT first_revision, revision FROM changes ORDER BY revision").map { ($0[0], $0[1]) }
        }
    }

    @Test func aSegmentIsTheSchemasLogSegmentAndARowOfOneIsTheRecordItself() throws {
        let group = (1...3).map { revision($0, "k\($0)", "\($0)", session: 7, cause: "test: step(\($0))") }
        let body = LogSegment.body(of: group)
        let decoded = try Sharedstate_V1_LogSegment(serializedBytes: body)
        #expect(try decoded.revisions.map { try $0.serializedBytes() as Data } == group.map(\.logRecord))
        #expect(LogSegment.body(of: group[1...1]) == group[1].logRecord)

        let read = try LogSegment.revisions(in: body, first: 1, last: 3)
        #expect(read.map(\.revision) == [1, 2, 3])
        #expect(read.map(\.changes) == group.map(\.changes))
        #expect(read.map(\.cause) == group.map(\.cause))
        #expect(try LogSegment.revisions(in: group[0].logRecord, first: 1, last: 1).map(\.changes) == [group[0].changes])
    }

    @Test func aDamagedRowIsNamedNotACrash() throws {
        let group = (4...6).map { revision($0, "k", "\($0)") }
        let body = LogSegment.body(of: group)
        for damaged in [body.prefix(body.count - 3), body + Data([0x12, 0x01, 0x00]), Data([0xFF, 0xFF])] {
            #expect {
                try LogSegment.revisions(in: damaged, first: 4, last: 6)
            } throws: { error in
                "\(error)".contains("4–6")
            }
        }
        // The columns say other revisions than the body holds, or are nonsense.
        #expect(throws: LogSegment.DecodingError.self) { try LogSegment.revisions(in: body, first: 4, last: 7) }
        #expect(throws: LogSegment.DecodingError.self) { try LogSegment.revisions(in: body, first: 6, last: 4) }
        #expect(throws: LogSegment.DecodingError.self) { try LogSegment.revisions(in: body, first: 0, last: .max) }
    }

    @Test func aGroupIsOneRowAndEveryReaderSeesItsRevisions() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let storage = try Storage(path: path, durability: .normal)
        try storage.commit([revision(1, "a", "1", session: 3, cause: "first")])
        try storage.commit((2...5).map { revision($0, $0 % 2 == 0 ? "a" : "b", "\($0)", session: 3, cause: "r\($0)") })
        try storage.commit([revision(6, "a", "6")])
        #expect(storage.journaled.withLock { $0.map(\.segment.first) } == [1, 2, 6])

        func expectEveryReaderSeesThem() async throws {
            #expect(try await storage.changes(after: 0, through: 6).map(\.revision) == [1, 2, 3, 4, 5, 6])
            #expect(try await storage.changes(after: 2, through: 4).map(\.revision) == [3, 4])
            #expect(try await storage.changes(after: 5, through: 6).map(\.revision) == [6])
            let history = try await storage.history(of: "a", limit: nil)
            #expect(history.map(\.change.revision) == [1, 2, 4, 6])
            #expect(history.map(\.cause) == ["first", "r2", "r4", ""])
            #expect(try await storage.history(of: "a", limit: 2).map(\.change.revision) == [4, 6])
            let at3 = try await storage.entries(of: ["a", "b"], at: 3)
            #expect(at3["a"]??.modRevision == 2)
            #expect(at3["b"]??.modRevision == 3)
        }
        // From the journal, then from the table, where one move merged the segments into a row.
        try await expectEveryReaderSeesThem()
        try storage.materialize()
        #expect(storage.journaled.withLock { $0.isEmpty })
        #expect(try rows(path).map(\.first) == [1])
        #expect(try rows(path).map(\.last) == [6])
        try await expectEveryReaderSeesThem()
        // Half in the table, half in the journal.
        try storage.commit([revision(7, "a", "7", cause: "r7")])
        #expect(try await storage.changes(after: 4, through: 7).map(\.revision) == [5, 6, 7])
        #expect(try await storage.history(of: "a", limit: 3).map(\.cause) == ["r4", "", "r7"])
        #expect(try await storage.entries(of: ["a", "b"], at: 7)["a"]??.modRevision == 7)

        let restarted = try Storage(path: path, durability: .normal)
        let loaded = try restarted.load()
        #expect(loaded.revision == 7)
        #expect(loaded.plainEntries["a"]?.modRevision == 7)
        #expect(loaded.plainEntries["b"]?.modRevision == 5)
    }

    @Test func compactionInsideARowHidesWhatItCompacted() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let storage = try Storage(path: path, durability: .normal)
        let engine = EngineStandIn(storage)
        try engine.commit((1...4).map { revision($0, "a", "\($0)") })
        try engine.materialize()
        try engine.commit([revision(5, "a", "5")])
        try engine.materialize()
        try await storage.compact(through: 2)
        // The row of 1–4 stays, since 3 and 4 are kept; what it holds up to 2 is gone for readers.
        #expect(try rows(path).map(\.last) == [4, 5])
        #expect(try await storage.history(of: "a", limit: nil).map(\.change.revision) == [3, 4, 5])
        #expect(try await storage.entries(of: ["a"], at: 2).isEmpty)
        try await storage.compact(through: 4)
        #expect(try rows(path).map(\.last) == [5])
    }

    @Test func consecutiveSegmentsAreMergedIntoRowsThatReadAsTheirRevisions() throws {
        let group = (1...6).map { revision($0, "k\($0)", "\($0)") }
        let segments = [
            JournalScan.Segment(first: 1, last: 1, body: LogSegment.body(of: group[0...0])),
            JournalScan.Segment(first: 2, last: 4, body: LogSegment.body(of: group[1...3])),
            JournalScan.Segment(first: 5, last: 5, body: LogSegment.body(of: group[4...4])),
            JournalScan.Segment(first: 6, last: 6, body: LogSegment.body(of: group[5...5])),
        ]
        let merged = try LogSegment.rows(of: segments, mergedBytes: 1 << 20, maxBytes: 1 << 20)
        #expect(merged.map(\.first) == [1] && merged.map(\.last) == [6])
        #expect(try LogSegment.revisions(in: merged[0].body, first: 1, last: 6).map(\.logRecord) == group.map(\.logRecord))
        // Rows of at most a few segments' bytes: each still a row of its own revisions.
        let small = try LogSegment.rows(of: segments, mergedBytes: segments[1].body.count, maxBytes: 1 << 20)
        #expect(small.count > 1 && small.first?.first == 1 && small.last?.last == 6)
        for row in small {
            #expect(try LogSegment.revisions(in: row.body, first: row.first, last: row.last).map(\.revision) == Array(row.first...row.last))
        }
    }

    @Test func aSegmentLargerThanARowMayBeIsSplitBetweenItsRevisions() throws {
        let group = (1...6).map { revision($0, "k\($0)", "\"" + String(repeating: "x", count: 100) + "\"") }
        let segment = JournalScan.Segment(first: 1, last: 6, body: LogSegment.body(of: group))
        #expect(try LogSegment.split(segment, maxBytes: 10_000) == [segment])
        let field = 1 + ProtobufFieldWriter.lengthDelimitedSize(group[0].logRecord.count)
        let rows = try LogSegment.split(segment, maxBytes: 2 * field)
        #expect(rows.map(\.first) == [1, 3, 5] && rows.map(\.last) == [2, 4, 6])
        for row in rows {
            let read = try LogSegment.revisions(in: row.body, first: row.first, last: row.last)
            #expect(read.map(\.logRecord) == group[Int(row.first - 1)..<Int(row.last)].map(\.logRecord))
        }
        // A record larger than the limit is a row of its own, which is the record itself.
        let single = try LogSegment.split(segment, maxBytes: 10)
        #expect(single.count == 6 && single[0].body == group[0].logRecord)
    }

    @Test func aLargeJournalFoundAtStartMovesInSeveralTransactionsAndReadsAsOne() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        do {
            // Left as a crash leaves it: the journal holds every revision, the database none.
            let storage = try Storage(path: path, durability: .normal)
            for number: UInt64 in 1...10 { try storage.commit([revision(number, "k\(number % 3)", "\(number)")]) }
        }
        let storage = try Storage(
            path: path, durability: .normal,
            materialization: .init(maxRevisions: 1000, maxDelay: .seconds(3600), maxBytesPerTransaction: 100))
        let rows = try rows(path)
        #expect(rows.count >= 2 && rows.last?.last == 10, "\(rows)")
        #expect(try await storage.changes(after: 0, through: 10).map(\.revision) == Array(1...10))
        try storage.close()
        let loaded = try Storage(path: path, durability: .normal).load()
        #expect(loaded.revision == 10 && loaded.plainEntries["k1"]?.modRevision == 10)
    }

    @Test func rowsFromBeforeSegmentsReadAsTheyAre() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        // A database as the syncd before segments left it: one record per row, no first_revision.
        let old = try DatabaseQueue(path: path)
        try StorageMigrations.migrator.migrate(old, upTo: "v4: writers of revisions")
        let records = (1...3).map { revision($0, "k", "\($0)") }
        try await old.write { db in
            for record in records {
                try db.execute(
                    sql: "INSERT INTO changes (revision, body) VALUES (?, ?)", arguments: [Int64(record.revision), record.logRecord])
            }
        }
        try old.close()

        let storage = try Storage(path: path, durability: .normal)
        #expect(try storage.load().revision == 3)
        #expect(try await storage.changes(after: 1, through: 3).map(\.revision) == [2, 3])
        try storage.commit((4...5).map { revision($0, "k", "\($0)") })
        #expect(try await storage.history(of: "k", limit: nil).map(\.change.revision) == [1, 2, 3, 4, 5])
        try storage.materialize()
        #expect(try rows(path).map(\.first) == [nil, nil, nil, 4])
    }

    @Test func aDamagedRowStopsTheStartWithItsRevisions() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        do {
            // Rows that hold their records: those a start moves from the journal it finds.
            let storage = try Storage(path: path, durability: .normal)
            try storage.commit((1...3).map { revision($0, "k", "\($0)") })
        }
        try Storage(path: path, durability: .normal).close()
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM changes WHERE length(body) > 0") == 1)
            try db.execute(sql: "UPDATE changes SET body = substr(body, 1, length(body) - 4)")
            // As a syncd from before the journal left it: the log not yet in `entries`.
            try db.execute(sql: "UPDATE meta SET value = 0 WHERE name IN ('revision', 'entries_revision')")
            try db.execute(sql: "DELETE FROM entries")
        }
        try queue.close()
        #expect {
            try Storage(path: path, durability: .normal).load()
        } throws: { error in
            "\(error)".contains("1–3")
        }
    }
}
