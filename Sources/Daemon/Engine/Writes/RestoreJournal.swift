import SharedStateWire

/// The keys written while restores are narrowed against an older copy of the state (see
/// ``StateEngine/restore(_:)``), so that the writer rechecks only those.
///
/// It exists only while a restore is being narrowed: the writer records into it when it publishes
/// a commit, and the last restore to finish drops it.
package struct RestoreJournal {
    /// How many restores are being narrowed or wait for the writer.
    var restores = 0
    /// Each key written meanwhile, with the revision that wrote it, in revision order.
    private var written: [(revision: UInt64, key: String)] = []

    /// Records the keys `revisions` wrote.
    mutating func record(_ revisions: [CommittedRevision]) {
        for revision in revisions {
            for index in revision.changes.indices { written.append((revision.revision, revision.changes.key(at: index))) }
        }
    }

    /// The keys written after `revision` (a key written twice comes twice): found by a binary
    /// search, so a restore narrowed late does not pay for what an earlier one recorded.
    func keys(writtenAfter revision: UInt64) -> [String] {
        var low = written.startIndex
        var high = written.endIndex
        while low < high {
            let middle = (low + high) / 2
            if written[middle].revision <= revision { low = middle + 1 } else { high = middle }
        }
        return written[low...].map(\.key)
    }
}
