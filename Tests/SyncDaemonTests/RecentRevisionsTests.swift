import Foundation
import SharedStateWire
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

/// What an etcd-backed syncd replays and shows as history: the revisions it published, bounded.
@Suite struct RecentRevisionsTests {
    private func put(_ key: String, _ value: String, revision: UInt64, version: UInt64, created: UInt64? = nil) -> Change {
        .put(Entry(key: key, value: Data(value.utf8), version: version, createRevision: created ?? revision, modRevision: revision))
    }

    /// a: 1 at 11, b: x at 12, a: 2 at 13, a deleted at 14, a: 3 at 15 (after revision 10).
    private func held() -> RecentRevisions {
        var recent = RecentRevisions(after: 10)
        recent.append([
            CommittedRevision(revision: 11, changes: [put("a", "1", revision: 11, version: 1)]),
            CommittedRevision(revision: 12, changes: [put("b", "x", revision: 12, version: 4, created: 2)]),
            CommittedRevision(revision: 13, changes: [put("a", "2", revision: 13, version: 2, created: 11)]),
            CommittedRevision(revision: 14, changes: [.delete("a", revision: 14)]),
            CommittedRevision(revision: 15, changes: [put("a", "3", revision: 15, version: 1)]),
        ])
        return recent
    }

    @Test func replaysExactlyTheRangeAskedForAndRefusesWhatItNoLongerHolds() {
        var recent = held()
        #expect(recent.revisions(after: 10, through: 15)?.map(\.revision) == [11, 12, 13, 14, 15])
        #expect(recent.revisions(after: 12, through: 14)?.map(\.revision) == [13, 14])
        #expect(recent.revisions(after: 15, through: 15)?.isEmpty == true)
        #expect(recent.revisions(after: 9, through: 15) == nil)
        recent.keep(atMost: 2)
        #expect(recent.compactedRevision == 13)
        #expect(recent.revisions(after: 12, through: 15) == nil)
        #expect(recent.revisions(after: 13, through: 15)?.map(\.revision) == [14, 15])
        #expect(recent.lastRevision == 15)
    }

    @Test func historyIsAKeysChangesOldestFirst() {
        let recent = held()
        #expect(recent.changes(of: "a", limit: nil).map(\.revision.revision) == [11, 13, 14, 15])
        #expect(recent.changes(of: "a", limit: 2).map(\.revision.revision) == [14, 15])
        #expect(recent.changes(of: "c", limit: nil).isEmpty)
    }

    @Test func anEntryAtAnOldRevisionIsKnownOnlyWhereTheHeldRevisionsTellIt() {
        let recent = held()
        let current = Entry(key: "a", value: Data("3".utf8), version: 1, createRevision: 15, modRevision: 15)
        #expect(recent.entry(of: "a", at: 13, current: current)??.value == Data("2".utf8))
        // Deleted at 14: absent then.
        #expect(recent.entry(of: "a", at: 14, current: current) == .some(nil))
        // Created at 11 (version 1): absent before.
        #expect(recent.entry(of: "a", at: 10, current: current) == .some(nil))
        // b's version 4 at 12 follows an entry from before what is held: unknown.
        #expect(recent.entry(of: "b", at: 11, current: nil) == nil)
        // A key not written since: what it is now.
        let c = Entry(key: "c", value: Data("7".utf8), version: 1, createRevision: 3, modRevision: 3)
        #expect(recent.entry(of: "c", at: 12, current: c) == .some(c))
    }
}
