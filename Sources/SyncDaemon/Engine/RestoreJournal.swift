import SharedStateWire

/// The keys written while restores are narrowed against an older copy of the state (see
/// ``StateEngine/restore(_:)``), so that the writer rechecks only those.
///
/// It exists only while a restore is being narrowed: the writer records into it when it publishes
/// a commit, and the last restore to finish drops it.
struct RestoreJournal {
    /// How many restores are being narrowed or wait for the writer.
    var restores = 0
    /// Each key written meanwhile, with the last revision that wrote it.
    private var written: [String: UInt64] = [:]

    /// Records the keys `revisions` wrote.
    mutating func record(_ revisions: [CommittedRevision]) {
        for revision in revisions {
            for change in revision.changes { written[change.key] = revision.revision }
        }
    }

    /// The keys written after `revision`.
    func keys(writtenAfter revision: UInt64) -> [String] {
        written.compactMap { $0.value > revision ? $0.key : nil }
    }
}
