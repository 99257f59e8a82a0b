import SharedStateWire
import SyncEngine

/// The revisions an ``EtcdBackend`` reported most recently, in order: what a watch that resumes
/// replays, and what `history` shows, as Kubernetes' API server serves watches from its watch
/// cache rather than from etcd.
///
/// It holds every revision after ``compactedRevision``; trimming it (to the retention policy, or
/// `syncctl compact`) moves that revision up. A replay from before it is `compacted`, and the
/// client takes a snapshot instead, as it does after a compaction on SQLite.
package struct RecentRevisions: Sendable {
    private var revisions: [CommittedRevision] = []
    /// Index of the first revision still held: trimming moves it, and the array is cut once
    /// half of it is trimmed, so trimming costs O(1) amortized.
    private var start = 0
    /// Every revision after this one is held.
    private(set) var compactedRevision: UInt64

    init(after revision: UInt64) {
        compactedRevision = revision
    }

    /// How many revisions are held.
    var count: Int { revisions.count - start }

    /// The newest revision held, or ``compactedRevision`` when none is.
    var lastRevision: UInt64 { start < revisions.count ? revisions[revisions.count - 1].revision : compactedRevision }

    /// Adds revisions newer than every one held.
    mutating func append(_ new: [CommittedRevision]) {
        revisions.append(contentsOf: new)
    }

    /// Forgets every revision up to and including `revision`; nothing newer is held after a
    /// revision that is not (a jump, after a snapshot), and then it forgets everything before.
    mutating func compact(through revision: UInt64) {
        guard revision > compactedRevision else { return }
        start = firstIndex(after: revision)
        compactedRevision = revision
        if start > 1024 && start * 2 > revisions.count {
            revisions.removeFirst(start)
            start = 0
        }
    }

    /// Keeps at most the `limit` newest revisions.
    mutating func keep(atMost limit: Int) {
        guard count > limit else { return }
        compact(through: revisions[revisions.count - limit - 1].revision)
    }

    /// The revisions after `revision` through `through`, in order; nil when some of them are no
    /// longer held.
    func revisions(after revision: UInt64, through: UInt64) -> [CommittedRevision]? {
        guard revision >= compactedRevision else { return nil }
        let from = firstIndex(after: revision)
        var found: [CommittedRevision] = []
        for index in from..<revisions.count {
            guard revisions[index].revision <= through else { break }
            found.append(revisions[index])
        }
        return found
    }

    /// The changes of `key` held, oldest first: the most recent `limit`, or all with nil.
    func changes(of key: String, limit: Int?) -> [(change: Change, revision: CommittedRevision)] {
        var found: [(change: Change, revision: CommittedRevision)] = []
        for index in stride(from: revisions.count - 1, through: start, by: -1) {
            if let limit, found.count >= limit { break }
            let revision = revisions[index]
            for change in revision.changes.reversed() where change.key == key {
                found.append((change, revision))
                break
            }
        }
        return found.reversed()
    }

    /// The entry `key` had at `revision` (`.some(nil)`: it did not exist), as far as the
    /// revisions held tell: nil when they do not, because its last change at or before
    /// `revision` is no longer held and it changed since. `current` is its entry now.
    func entry(of key: String, at revision: UInt64, current: Entry?) -> Entry?? {
        var firstLater: Change?
        for index in stride(from: revisions.count - 1, through: start, by: -1) {
            let held = revisions[index]
            guard let change = held.changes.last(where: { $0.key == key }) else { continue }
            if held.revision <= revision { return .some(change.type == .put ? change.entry : nil) }
            firstLater = held.changes.first(where: { $0.key == key })
        }
        guard let firstLater else { return .some(current) }
        // Created after `revision`: it did not exist then. Otherwise what it was is gone.
        if firstLater.type == .put && firstLater.entry.version == 1 { return .some(nil) }
        return nil
    }

    /// The index of the first revision held above `revision`.
    private func firstIndex(after revision: UInt64) -> Int {
        var low = start
        var high = revisions.count
        while low < high {
            let middle = (low + high) / 2
            if revisions[middle].revision <= revision { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
