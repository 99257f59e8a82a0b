import Foundation
import Testing

@testable import SyncClient

/// What a watch's consumer has been told: the revision a reconnect resumes after, and resyncs as
/// differences.
@Suite struct WatchCursorTests {
    private func put(_ key: String, _ value: String, at revision: UInt64) -> Change {
        .put(Entry(key: key, value: Data(value.utf8), version: 1, createRevision: revision, modRevision: revision))
    }

    @Test func aResyncBelowTheRevisionItKnewMovesTheCursorBack() {
        var cursor = WatchCursor()
        _ = cursor.absorb(WatchBatch(kind: .snapshot, revision: 3, changes: [put("a", "1", at: 3)]), isFirst: true)
        _ = cursor.absorb(WatchBatch(kind: .changes, revision: 10, changes: [put("a", "2", at: 10)]), isFirst: false)
        #expect(cursor.revision == 10)
        // syncd came back with an older database, at revision 5: resuming after 10 would skip the
        // new timeline's revisions 6 to 10.
        let resync = cursor.absorb(WatchBatch(kind: .snapshot, revision: 5, changes: [put("a", "1", at: 3)]), isFirst: false)
        #expect(cursor.revision == 5)
        #expect(resync.kind == .resync)
        #expect(resync.changes == [put("a", "1", at: 3)])
        _ = cursor.absorb(WatchBatch(kind: .changes, revision: 6, changes: [put("b", "x", at: 6)]), isFirst: false)
        #expect(cursor.revision == 6)
    }

    @Test func progressAndChangesNeverMoveItBack() {
        var cursor = WatchCursor()
        _ = cursor.absorb(WatchBatch(kind: .snapshot, revision: 8, changes: []), isFirst: true)
        _ = cursor.absorb(WatchBatch(kind: .progress, revision: 7, changes: []), isFirst: false)
        #expect(cursor.revision == 8)
        _ = cursor.absorb(WatchBatch(kind: .progress, revision: 12, changes: []), isFirst: false)
        #expect(cursor.revision == 12)
    }
}
