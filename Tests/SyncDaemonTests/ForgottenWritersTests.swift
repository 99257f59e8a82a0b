import Foundation
import GRDB
import SharedStateWire
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

/// The `sessions` table names the writers of the revisions the change log holds: compaction takes
/// the rows no revision names any more, and session ids still never repeat across restarts.
@Suite struct ForgottenWritersTests {
    private func write(_ engine: StateEngine, _ key: String, by session: UInt64) async {
        let writer = WriterIdentity(session: session, clientName: "client-\(session)", pid: 1, uid: 0, gid: 0)
        _ = await withCheckedContinuation { continuation in
            engine.submit(.put(key: key, value: Data("1".utf8), ifVersion: nil), origin: WriteOrigin(writer: writer, cause: "")) {
                continuation.resume(returning: $0)
            }
        }
    }

    private func sessionRows(_ path: String) throws -> [UInt64] {
        try DatabaseQueue(path: path).read { db in
            try Int64.fetchAll(db, sql: "SELECT session_id FROM sessions ORDER BY session_id").map { UInt64($0) }
        }
    }

    /// Whether the `sessions` rows come to be `expected` within 15 s: a writer's row is inserted
    /// by the move after its first write (within a second), not by the write.
    private func sessionRows(_ path: String, become expected: [UInt64]) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            if try sessionRows(path) == expected { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try sessionRows(path) == expected
    }

    @Test func compactionForgetsTheWritersNoKeptRevisionNamesAndIdsNeverRepeat() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        try await withEngine(path: path) { engine in
            await write(engine, "a", by: 5)  // revision 1
            await write(engine, "b", by: 7)  // revision 2
            await write(engine, "a", by: 5)  // revision 3
            try await engine.compact(through: 2)
            // Session 7 wrote nothing the log still holds; session 5 wrote revision 3.
            #expect(try await sessionRows(path, become: [5]))
            #expect(try await engine.history(of: "a", limit: nil).changes.last?.writer?.clientName == "client-5")
            // A session that writes again after being forgotten is recorded again.
            await write(engine, "c", by: 7)  // revision 4
            #expect(try await sessionRows(path, become: [5, 7]))
        }
        try await withEngine(path: path) { engine in
            // Numbered above every session the database has known.
            #expect(engine.lastSessionIDOfEarlierRuns == 7)
            await write(engine, "d", by: 8)  // revision 5
            // Past the revision this run started at, no earlier run's session is named.
            try await engine.compact(through: 4)
            #expect(try await sessionRows(path, become: [8]))
            await write(engine, "e", by: 9)  // revision 6
            try await engine.compact(through: 6)
            #expect(try await sessionRows(path, become: []))
        }
        try await withEngine(path: path) { engine in
            #expect(engine.lastSessionIDOfEarlierRuns == 9)
        }
    }
}
