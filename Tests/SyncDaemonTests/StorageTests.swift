import Foundation
import GRDB
import SharedStateWire
import Subprocess
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

@Suite struct StorageTests {
    private func entry(_ key: String, _ json: String, version: UInt64 = 1, revision: UInt64) -> Entry {
        Entry(key: key, value: Data(json.utf8), version: version, createRevision: revision, modRevision: revision)
    }

    /// Commits one revision per number, each putting key `k<revision>`.
    private func commitPuts(_ revisions: ClosedRange<UInt64>, to storage: Storage) throws {
        try commitPuts(revisions, to: EngineStandIn(storage))
    }

    /// Commits one revision per number, each putting key `k<revision>`, through the engine's part.
    private func commitPuts(_ revisions: ClosedRange<UInt64>, to engine: EngineStandIn) throws {
        for revision in revisions {
            let put = Change.put(entry("k\(revision)", "\(revision)", revision: revision))
            try engine.commit([CommittedRevision(revision: revision, changes: [put])])
        }
    }

    @Test func committedRevisionsSurviveReopening() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        do {
            let storage = try Storage(path: path, durability: .normal)
            try storage.commit([
                CommittedRevision(revision: 1, changes: [.put(entry("a", "1", revision: 1))]),
                CommittedRevision(
                    revision: 2,
                    changes: [.put(entry("b", #"{"x":[1,2]}"#, revision: 2)), .put(entry("c", "true", revision: 2))]
                ),
            ])
            try storage.commit([CommittedRevision(revision: 3, changes: [.delete("c", revision: 3)])])
            try storage.close()
        }
        let reopened = try Storage(path: path, durability: .normal)
        let loaded = try reopened.load()
        #expect(loaded.revision == 3)
        #expect(loaded.plainEntries == ["a": entry("a", "1", revision: 1), "b": entry("b", #"{"x":[1,2]}"#, revision: 2)])

        let log = try await reopened.changes(after: 1, through: 3)
        #expect(log.map(\.revision) == [2, 3])
        #expect(log[0].changes.map(\.key) == ["b", "c"])
        #expect(Array(log[1].changes) == [.delete("c", revision: 3)])
    }

    @Test func durabilitySetsSynchronousOnTheWriter() throws {
        let directory = try TemporaryDirectory()
        // GRDB sets NORMAL on its own after opening; the setting must survive that.
        let full = try Storage(path: directory.file("full.sqlite"), durability: .full)
        #expect(try full.writerPragma("synchronous") == "2")
        let normal = try Storage(path: directory.file("normal.sqlite"), durability: .normal)
        #expect(try normal.writerPragma("synchronous") == "1")
        #expect(try normal.writerPragma("journal_mode") == "wal")
    }

    @Test func noOtherProcessReadsTheDatabaseWhileItIsOpen() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let storage = try Storage(path: path, durability: .normal)
        try commitPuts(1...3, to: storage)
        // The write-ahead log's index lives in this process's memory, not in a shared file.
        #expect(!FileManager.default.fileExists(atPath: path + "-shm"))
        #expect(try await Self.countChangesInAnotherProcess(path).contains("database is locked"))
        try storage.close()
        // The three revisions, moved together: one row.
        #expect(try await Self.countChangesInAnotherProcess(path) == "1")
    }

    /// What `python3`'s own SQLite says when it counts the change log's rows at `path`: the
    /// count, or its error.
    private static func countChangesInAnotherProcess(_ path: String) async throws -> String {
        let script = """
            import sqlite3, sys
            try:
                print(sqlite3.connect(sys.argv[1], timeout=0).execute("SELECT count(*) FROM changes").fetchone()[0])
            except sqlite3.Error as error:
                print(error)
            """
        let result = try await Subprocess.run(.name("python3"), arguments: ["-c", script, path], output: .string(limit: 64 << 10))
        return result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func backgroundCheckpointsRestartTheLogWithoutLosingCommits() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let storage = try Storage(path: path, durability: .normal)
        // Commits never checkpoint on their own at ordinary sizes.
        #expect(try storage.writerPragma("wal_autocheckpoint") == "65536")
        func walBytes() -> Int {
            ((try? FileManager.default.attributesOfItem(atPath: path + "-wal"))?[.size] as? NSNumber)?.intValue ?? 0
        }
        // Commits go to the segment journal; each materialisation writes to SQLite's log.
        try commitPuts(1...200, to: storage)
        try storage.materialize()
        let grown = walBytes()
        #expect(grown > 0)
        #expect(try await storage.checkpoint(restartFrames: 1))
        // The log starts over: the next commits reuse it from the beginning instead of growing it.
        try commitPuts(201...400, to: storage)
        try storage.materialize()
        #expect(walBytes() <= grown)
        try storage.close()
        let loaded = try Storage(path: path, durability: .normal).load()
        #expect(loaded.revision == 400)
        #expect(loaded.entries.count == 400)
    }

    @Test func unwritableDirectoryIsReportedWithItsPath() throws {
        let directory = try TemporaryDirectory()
        let blocker = directory.file("not-a-directory")
        _ = FileManager.default.createFile(atPath: blocker, contents: Data())
        #expect {
            _ = try Storage(path: blocker + "/state.sqlite", durability: .normal)
        } throws: { error in
            "\(error)".contains(blocker)
        }
    }

    @Test func notADatabaseIsRefusedWithoutChangingIt() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let garbage = Data(repeating: 0x42, count: 8192)
        _ = FileManager.default.createFile(atPath: path, contents: garbage)
        #expect {
            _ = try Storage(path: path, durability: .normal)
        } throws: { error in
            "\(error)".contains(path)
        }
        #expect(FileManager.default.contents(atPath: path) == garbage)
    }

    // MARK: Entries materialised in batches

    /// The rows of `entries` and a meta value, read straight from the file.
    private func table(_ path: String) throws -> (keys: [String], entriesRevision: Int64, logRows: Int) {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            (
                try String.fetchAll(db, sql: "SELECT key FROM entries ORDER BY key"),
                try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE name = 'entries_revision'") ?? -1,
                try Int.fetchOne(db, sql: "SELECT count(*) FROM changes") ?? -1
            )
        }
    }

    @Test func aCommitAppendsOnlyToTheLogAndAStartReplaysIt() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let storage = try Storage(path: path, durability: .normal)
        try storage.commit([CommittedRevision(revision: 1, changes: [.put(entry("a", "1", revision: 1))])])
        try storage.commit([
            CommittedRevision(revision: 2, changes: [.put(entry("b", "2", revision: 2))]),
            CommittedRevision(revision: 3, changes: [.delete("a", revision: 3)]),
        ])
        #expect(try table(path).keys == [])
        #expect(storage.materializationDeadline != nil)

        // As after a crash: a second start on the same file, with nothing materialised.
        let restarted = try Storage(path: path, durability: .normal)
        let loaded = try restarted.load()
        #expect(loaded.revision == 3)
        #expect(loaded.plainEntries == ["b": entry("b", "2", revision: 2)])

        // What was replayed is written with the restarted storage's first batch: the loaded table
        // marked it.
        #expect(try restarted.materialize() == false)
        #expect(try table(path).keys == [])
        #expect(try EngineStandIn(restarted, loaded: loaded).materialize())
        let after = try table(path)
        #expect(after.keys == ["b"])
        #expect(after.entriesRevision == 3)
        #expect(restarted.materializationDeadline == nil)
        #expect(try Storage(path: path, durability: .normal).load().plainEntries == loaded.plainEntries)
    }

    /// A connection's first write costs the database nothing: its writer is journaled with the
    /// group, named by history at once, and its `sessions` row inserted by the move, or by the
    /// next start when syncd died first.
    @Test func aNewWriterIsJournaledAndItsRowInsertedByTheMove() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        func rows() throws -> [String] {
            try DatabaseQueue(path: path).read { try String.fetchAll($0, sql: "SELECT client_name FROM sessions ORDER BY session_id") }
        }
        let door = WriterIdentity(session: 5, clientName: "door-lock", pid: 77, uid: 1000, gid: 1000)
        let origin = WriteOrigin(writer: door, cause: "opened")
        do {
            let storage = try Storage(path: path, durability: .normal)
            try storage.commit(
                [CommittedRevision(revision: 1, changes: [.put(entry("door", "1", revision: 1))], origin: origin)], recording: [door])
            #expect(try rows() == [])
            #expect(try await storage.history(of: "door", limit: nil).map { $0.writer?.clientName } == ["door-lock"])
            try storage.materialize()
            #expect(try rows() == ["door-lock"])
            #expect(try await storage.history(of: "door", limit: nil).map { $0.writer?.pid } == [77])

            // Another writer, then a crash before any move.
            let fan = WriterIdentity(session: 6, clientName: "fan", pid: 78, uid: 1000, gid: 1000)
            try storage.commit(
                [
                    CommittedRevision(
                        revision: 2, changes: [.put(entry("fan", "2", revision: 2))], origin: WriteOrigin(writer: fan, cause: ""))
                ],
                recording: [fan])
            #expect(try rows() == ["door-lock"])
        }
        let restarted = try Storage(path: path, durability: .normal)
        #expect(try rows() == ["door-lock", "fan"])
        _ = try restarted.load()
        #expect(try await restarted.history(of: "fan", limit: nil).map { $0.writer?.clientName } == ["fan"])
    }

    @Test func materialisingWritesEveryKeyAsTheTableHasItWhateverCameBetween() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let storage = try Storage(path: path, durability: .normal)
        let engine = EngineStandIn(storage)
        var random = SystemRandomNumberGenerator()
        var versions: [String: UInt64] = [:]
        for revision in UInt64(1)...600 {
            // Puts and deletes over few keys, so that keys come and go between materialisations.
            let key = "k\(Int.random(in: 0..<60, using: &random))"
            let change: Change
            if versions[key] != nil, Int.random(in: 0..<4, using: &random) == 0 {
                versions[key] = nil
                change = .delete(key, revision: revision)
            } else {
                let version = (versions[key] ?? 0) + 1
                versions[key] = version
                change = .put(entry(key, "\(revision)", version: version, revision: revision))
            }
            try engine.commit([CommittedRevision(revision: revision, changes: [change])])
            if Int.random(in: 0..<40, using: &random) == 0 { try engine.materialize() }
        }
        try engine.materialize()
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        let rows = try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT key, value, version, mod_revision FROM entries").map { row in
                (row[0] as String, Data(row[1] as Data), row[2] as UInt64, row[3] as UInt64)
            }
        }
        #expect(rows.count == engine.table.count)
        for (key, value, version, modRevision) in rows {
            let expected = engine.table[key]?.entry(key: key)
            #expect(expected?.value == value && expected?.version == version && expected?.modRevision == modRevision, "\(key)")
        }
        #expect(try table(path).entriesRevision == 600)
    }

    @Test func materialisationIsDueAfterItsRevisionCountOrDelay() throws {
        let directory = try TemporaryDirectory()
        let storage = try Storage(
            path: directory.file("state.sqlite"),
            durability: .normal,
            materialization: .init(maxRevisions: 3, maxDelay: .seconds(3600))
        )
        let engine = EngineStandIn(storage)
        #expect(!storage.isMaterializationDue)
        try engine.commit([CommittedRevision(revision: 1, changes: [.put(entry("k", "1", revision: 1))])])
        #expect(!storage.isMaterializationDue)
        try engine.commit([
            CommittedRevision(revision: 2, changes: [.put(entry("k", "2", version: 2, revision: 2))]),
            CommittedRevision(revision: 3, changes: [.put(entry("k", "3", version: 3, revision: 3))]),
        ])
        #expect(storage.isMaterializationDue)
        // Moving the journal alone leaves the entries due.
        try storage.materialize()
        #expect(storage.isMaterializationDue)
        try engine.materialize()
        #expect(!storage.isMaterializationDue)

        let soon = try Storage(
            path: directory.file("other.sqlite"),
            durability: .normal,
            materialization: .init(maxRevisions: 1000, maxDelay: .zero)
        )
        try soon.commit([CommittedRevision(revision: 1, changes: [.put(entry("k", "1", revision: 1))])])
        #expect(soon.isMaterializationDue)
    }

    @Test func aCommitThatWouldRepeatOrSkipRevisionsKeepsNothingOfItsGroup() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let storage = try Storage(path: path, durability: .normal)
        let first = CommittedRevision(revision: 1, changes: [.put(entry("a", "1", revision: 1))])
        try storage.commit([first])
        let second = CommittedRevision(revision: 2, changes: [.put(entry("b", "2", revision: 2))])
        let third = CommittedRevision(revision: 3, changes: [.put(entry("c", "3", revision: 3))])
        // Revision 1 again, then a gap: each refused whole.
        #expect(throws: StorageError.self) { try storage.commit([first, second]) }
        #expect(throws: StorageError.self) { try storage.commit([second, first]) }
        #expect(throws: StorageError.self) { try storage.commit([third]) }
        #expect(throws: StorageError.self) { try Storage(path: path, durability: .normal).commit([first]) }
        #expect(try await storage.changes(after: 0, through: 3).map(\.revision) == [1])
        try storage.commit([second, third])
        #expect(try await storage.changes(after: 0, through: 3).map(\.revision) == [1, 2, 3])
    }

    @Test func compactionDeletesInChunksUntilDone() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let storage = try Storage(path: path, durability: .normal)
        let engine = EngineStandIn(storage)
        // A move each: a row each.
        for revision: UInt64 in 1...25 {
            try commitPuts(revision...revision, to: engine)
            try engine.materialize()
        }
        try await storage.compact(through: 23, chunk: 10)
        #expect(try table(path).logRows == 2)
        #expect(try await storage.changes(after: 23, through: 25).map(\.revision) == [24, 25])
    }

    @Test func compactionKeepsTheLogThatEntriesDoNotReflectYet() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let storage = try Storage(path: path, durability: .normal)
        let engine = EngineStandIn(storage)
        try commitPuts(1...3, to: engine)
        try engine.materialize()
        try commitPuts(4...5, to: engine)
        try await storage.compact(through: 5)
        // Revisions 4 and 5 are compacted for readers but kept in the journal for a restart.
        #expect(try table(path).logRows == 0)
        #expect(storage.journaled.withLock { $0.map(\.segment.last) } == [4, 5])
        #expect(try await storage.history(of: "k4", limit: nil).isEmpty)
        // A restart, on a copy of the files: two storages never share one database.
        let copy = directory.file("copy.sqlite")
        for suffix in ["", "-wal", "-segments"] where FileManager.default.fileExists(atPath: path + suffix) {
            try FileManager.default.copyItem(atPath: path + suffix, toPath: copy + suffix)
        }
        let restarted = try Storage(path: copy, durability: .normal).load()
        #expect(restarted.revision == 5)
        #expect(restarted.plainEntries.keys.sorted() == ["k1", "k2", "k3", "k4", "k5"])

        try engine.materialize()
        #expect(try table(path).logRows == 0)
        #expect(try table(path).keys == ["k1", "k2", "k3", "k4", "k5"])
    }
}

extension StartingState {
    /// The loaded entries as the wire knows them, to compare.
    var plainEntries: [String: Entry] {
        Dictionary(uniqueKeysWithValues: entries.all.map { ($0.key, $0.entry()) })
    }
}
