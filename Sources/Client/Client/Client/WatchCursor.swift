/// What a watch's consumer has been told so far: the revision it is current with and the last
/// revision of every key it knows. It turns every batch that replaces state (a resync from a
/// backlogged connection, or a new snapshot after a reconnect whose resume point was compacted)
/// into the difference from what the consumer knew, so the consumer sees one consistent sequence.
struct WatchCursor: Sendable {
    /// The revision the consumer is current with; nil before the first batch.
    private(set) var revision: UInt64?
    private var modRevisions: [String: UInt64] = [:]

    /// Takes in a batch from syncd; returns the batch to give the consumer.
    mutating func absorb(_ batch: WatchBatch, isFirst: Bool) -> WatchBatch {
        defer {
            // A batch that replaces the state says where the consumer now is, even below where it
            // was (syncd came back with an older database): resuming after the old revision would
            // skip what the new timeline commits up to it.
            let replacesState = batch.kind == .snapshot || batch.kind == .resync
            revision = replacesState ? batch.revision : max(revision ?? 0, batch.revision)
        }
        switch batch.kind {
        case .snapshot where isFirst:
            for change in batch.changes { modRevisions[change.key] = change.entry.modRevision }
            return batch
        case .snapshot, .resync:
            return WatchBatch(kind: .resync, revision: batch.revision, changes: difference(to: batch))
        default:
            for change in batch.changes {
                switch change.type {
                case .put: modRevisions[change.key] = change.entry.modRevision
                case .delete: modRevisions[change.key] = nil
                }
            }
            return batch
        }
    }

    /// Puts for keys that are new or changed, deletes for keys that are gone, in key order.
    private mutating func difference(to batch: WatchBatch) -> [Change] {
        var next: [String: UInt64] = [:]
        var changes: [Change] = []
        for change in batch.changes where change.type == .put {
            next[change.key] = change.entry.modRevision
            if modRevisions[change.key] != change.entry.modRevision { changes.append(change) }
        }
        for key in modRevisions.keys where next[key] == nil {
            changes.append(.delete(key, revision: batch.revision))
        }
        modRevisions = next
        return changes.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
    }
}
