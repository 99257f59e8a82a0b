import Foundation
import GRDB
import SharedStateWire
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncSQLite

/// A move names the journal's records where they are (``SealedJournals``): the row copies
/// nothing, every reader of the log reads the records from the journal, which outlives its
/// replacement under its salt; a missing, short or damaged journal is named, never skipped;
/// compaction lets the journals no row names go; a backup holds every record itself.
@Suite struct SealedJournalTests {
    private func revision(_ number: UInt64, _ key: String, _ json: String) -> CommittedRevision {
        let entry = Entry(key: key, value: Data(json.utf8), version: number, createRevision: 1, modRevision: number)
        return CommittedRevision(revision: number, changes: [.put(entry)], origin: WriteOrigin(writer: nil, cause: ""))
    }

    private struct ChangeRow: Equatable {
        var first: Int64
        var last: Int64
        var bodyBytes: Int
        var salt: Int64?
        var offset: Int64?
        var length: Int64?
    }

    private func rows(_ path: String) throws -> [ChangeRow] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT coalesce(first_revision, revision), revision, length(body), journal_salt, journal_offset, journal_length
                    FROM changes ORDER BY revision
                    """
            ).map { ChangeRow(first: $0[0], last: $0[1], bodyBytes: $0[2], salt: $0[3], offset: $0[4], length: $0[5]) }
        }
    }

    /// A storage at `path` that committed revisions 1–5 in two groups, synced and moved them, and
    /// closed: its journal was replaced, so the rows name a sealed one. Returns that journal's salt.
    private func movedAndClosed(_ path: String) throws -> UInt64 {
        let storage = try Storage(path: path, durability: .normal)
        try storage.commit((1...3).map { revision($0, "k", "\($0)") })
        try storage.commit((4...5).map { revision($0, "k", "\($0)") })
        let salt = try #require(storage.journal.header?.salt)
        let size = storage.journal.size
        try storage.journal.sync()
        try storage.materialize()
        #expect(
            try rows(path) == [
                ChangeRow(
                    first: 1, last: 5, bodyBytes: 0, salt: Int64(bitPattern: salt), offset: Int64(JournalHeader.size),
                    length: Int64(size) - Int64(JournalHeader.size))
            ])
        try storage.close()
        return salt
    }

    @Test func aMoveNamesTheRecordsWhereTheyAreAndEveryReaderReadsThemThere() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let salt = try movedAndClosed(path)
        let sealed = SealedJournals(journalPath: path + "-segments")
        #expect(FileManager.default.fileExists(atPath: sealed.path(salt: salt)))
        // The journal in place is a new one; the old one stays under its salt.
        #expect(try sealed.salts().contains(salt))

        let storage = try Storage(path: path, durability: .normal)
        #expect(try storage.load().revision == 5)
        #expect(try await storage.changes(after: 1, through: 4).map(\.revision) == [2, 3, 4])
        #expect(try await storage.history(of: "k", limit: nil).map(\.change.revision) == [1, 2, 3, 4, 5])
        #expect(try await storage.entries(of: ["k"], at: 2)["k"]??.value == Data("2".utf8))
        try storage.close()
    }

    @Test func recordsNotYetSyncedAreCopiedIntoTheirRowNotNamed() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let storage = try Storage(path: path, durability: .normal)
        try storage.commit((1...3).map { revision($0, "k", "\($0)") })
        try storage.journal.sync()
        let synced = storage.journal.size
        try storage.commit((4...5).map { revision($0, "k", "\($0)") })
        try storage.materialize()
        let rows = try rows(path)
        #expect(rows.count == 2, "\(rows)")
        #expect(rows.first.map { $0.first == 1 && $0.last == 3 && $0.salt != nil && $0.offset! + $0.length! == Int64(synced) } == true)
        #expect(rows.last.map { $0.first == 4 && $0.last == 5 && $0.salt == nil && $0.bodyBytes > 0 } == true)
        #expect(try await storage.history(of: "k", limit: nil).map(\.change.revision) == [1, 2, 3, 4, 5])
        try storage.close()

        // With `full`, every append is synced: a move names them all.
        let fullPath = directory.file("full.sqlite")
        let full = try Storage(path: fullPath, durability: .full)
        try full.commit((1...3).map { revision($0, "k", "\($0)") })
        try full.materialize()
        #expect(try self.rows(fullPath).map { $0.salt != nil } == [true])
        try full.close()
    }

    @Test func aLargeUnsyncedTailIsCopiedInBoundedTransactions() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let storage = try Storage(
            path: path, durability: .normal,
            materialization: .init(maxRevisions: 1000, maxDelay: .seconds(3600), maxBytesPerTransaction: 100))
        try storage.commit([revision(1, "k", "1")])
        try storage.journal.sync()
        for number: UInt64 in 2...10 { try storage.commit([revision(number, "k\(number % 3)", "\(number)")]) }
        try storage.materialize()
        #expect(storage.journaled.withLock { $0.isEmpty })
        let rows = try rows(path)
        #expect(rows.first.map { $0.first == 1 && $0.salt != nil } == true, "\(rows)")
        #expect(rows.dropFirst().count >= 2 && rows.dropFirst().allSatisfy { $0.salt == nil } && rows.last?.last == 10, "\(rows)")
        #expect(try await storage.changes(after: 0, through: 10).map(\.revision) == Array(1...10))
        try storage.close()
    }

    @Test func aMissingOrShortJournalStopsTheStartNamingItAndTheRevisions() throws {
        for damage in ["missing", "short"] {
            let directory = try TemporaryDirectory()
            let path = directory.file("state.sqlite")
            let file = SealedJournals(journalPath: path + "-segments").path(salt: try movedAndClosed(path))
            if damage == "missing" {
                try FileManager.default.removeItem(atPath: file)
            } else {
                #expect(truncate(file, 100) == 0)
            }
            #expect {
                try Storage(path: path, durability: .normal)
            } throws: { error in
                let message = "\(error)"
                return message.contains(file) && message.contains("revisions 1–5")
                    && message.contains(damage == "missing" ? "is missing" : "shorter") && message.contains("syncctl restore")
            }
        }
    }

    @Test func aJournalCopiedWithoutItsSealedNameKeepsTheRecordsTheRowsName() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        do {
            // Left as a crash leaves it: revisions 1–3 named in the journal, 4–5 only in it.
            let storage = try Storage(path: path, durability: .normal)
            try storage.commit((1...3).map { revision($0, "k", "\($0)") })
            try storage.journal.sync()
            try storage.materialize()
            try storage.commit((4...5).map { revision($0, "k", "\($0)") })
        }
        // Copied elsewhere as the three files the journal's own name suggests, without its
        // sealed name: start-up gives it that name before a new journal takes its place.
        let elsewhere = try TemporaryDirectory()
        let copy = elsewhere.file("state.sqlite")
        for suffix in ["", "-wal", "-segments"] where FileManager.default.fileExists(atPath: path + suffix) {
            try FileManager.default.copyItem(atPath: path + suffix, toPath: copy + suffix)
        }
        #expect(try SealedJournals(journalPath: copy + "-segments").salts().isEmpty)
        let storage = try Storage(path: copy, durability: .normal)
        #expect(try storage.load().revision == 5)
        #expect(try await storage.history(of: "k", limit: nil).map(\.change.revision) == [1, 2, 3, 4, 5])
        try storage.close()
    }

    @Test func aDamagedRecordIsNamedWhenRead() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let file = SealedJournals(journalPath: path + "-segments").path(salt: try movedAndClosed(path))
        // A byte inside the second group's record.
        let handle = try #require(FileHandle(forUpdatingAtPath: file))
        let size = try handle.seekToEnd()
        try handle.seek(toOffset: size - 3)
        try handle.write(contentsOf: Data([0xFF]))
        try handle.close()

        let storage = try Storage(path: path, durability: .normal)
        await #expect {
            _ = try await storage.changes(after: 0, through: 5)
        } throws: { error in
            "\(error)".contains(file) && "\(error)".contains("revisions 1–5") && "\(error)".contains("damaged")
        }
        try storage.close()
    }

    @Test func compactionLetsTheJournalsNoRowNamesGoAtTheNextReplacement() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        // Each move replaces the journal.
        let storage = try Storage(
            path: path, durability: .normal, materialization: .init(maxRevisions: 1, maxDelay: .zero, journalReplacementBytes: 1))
        var salts: [UInt64] = []
        for number: UInt64 in 1...4 {
            salts.append(try #require(storage.journal.header?.salt))
            try storage.commit([revision(number, "k", "\(number)")])
            try storage.journal.sync()
            let entry = StoredEntry.make(revision(number, "k", "\(number)").changes[0].entry)
            try storage.materialize(changedEntries: { ChangedEntries(entries: [entry], deletedKeys: []) })
        }
        let sealed = SealedJournals(journalPath: path + "-segments")
        #expect(Set(salts).isSubset(of: Set(try sealed.salts())))
        try await storage.compact(through: 3)
        // Compaction alone removes no file: only a synced transaction says what stays.
        #expect(Set(salts).isSubset(of: Set(try sealed.salts())))
        try storage.commit([revision(5, "k", "5")])
        try storage.journal.sync()
        try storage.materialize()
        // A reader may still hold a snapshot that names them: they go at the next replacement.
        #expect(Set(salts[0..<3]).isSubset(of: Set(try sealed.salts())))
        try storage.commit([revision(6, "k", "6")])
        try storage.journal.sync()
        try storage.materialize()
        let left = Set(try sealed.salts())
        #expect(left.isDisjoint(with: salts[0..<3]), "\(left)")
        #expect(left.contains(salts[3]))
        #expect(try await storage.history(of: "k", limit: nil).map(\.change.revision) == [4, 5, 6])
        try storage.close()
    }

    @Test func aBackupHoldsEveryRecordItselfAndReadsWithoutTheJournals() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        _ = try movedAndClosed(path)
        let storage = try Storage(path: path, durability: .normal)
        _ = try storage.load()
        try storage.commit([revision(6, "k", "6")])
        let backupDirectory = try TemporaryDirectory()
        let copy = backupDirectory.file("copy.sqlite")
        #expect(try await storage.backup(to: copy) == 6)
        try storage.close()
        #expect(try rows(copy).allSatisfy { $0.salt == nil && $0.bodyBytes > 0 })
        #expect(try rows(copy).map(\.last) == [5, 6])

        // In a directory of its own, without a journal: the copy alone.
        let restored = try Storage(path: copy, durability: .normal)
        #expect(try restored.load().revision == 6)
        #expect(try await restored.history(of: "k", limit: nil).map(\.change.revision) == [1, 2, 3, 4, 5, 6])
        try restored.close()
    }
}
