import Foundation
import GRDB
import SharedStateWire
import Testing

@testable import SyncDaemon

@Suite struct StorageTests {
    private func entry(_ key: String, _ json: String, version: UInt64 = 1, revision: UInt64) -> Entry {
        Entry(key: key, value: Data(json.utf8), version: version, createRevision: revision, modRevision: revision)
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
        #expect(loaded.entries == ["a": entry("a", "1", revision: 1), "b": entry("b", #"{"x":[1,2]}"#, revision: 2)])

        let log = try await reopened.changes(after: 1, through: 3)
        #expect(log.map(\.revision) == [2, 3])
        #expect(log[0].changes.map(\.key) == ["b", "c"])
        #expect(log[1].changes == [.delete("c", revision: 3)])
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

    @Test func backgroundCheckpointsRestartTheLogWithoutLosingCommits() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let storage = try Storage(path: path, durability: .normal)
        // Commits never checkpoint on their own at ordinary sizes.
        #expect(try storage.writerPragma("wal_autocheckpoint") == "65536")
        func walBytes() -> Int {
            ((try? FileManager.default.attributesOfItem(atPath: path + "-wal"))?[.size] as? NSNumber)?.intValue ?? 0
        }
        for revision in UInt64(1)...200 {
            try storage.commit([
                CommittedRevision(revision: revision, changes: [.put(entry("k\(revision)", "\(revision)", revision: revision))])
            ])
        }
        let grown = walBytes()
        #expect(try await storage.checkpoint(restartFrames: 1))
        // The log starts over: the next commits reuse it from the beginning instead of growing it.
        for revision in UInt64(201)...400 {
            try storage.commit([
                CommittedRevision(revision: revision, changes: [.put(entry("k\(revision)", "\(revision)", revision: revision))])
            ])
        }
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
}
