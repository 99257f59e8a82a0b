/// A local copy of the entries a watch selects, kept current by the watch's batches.
///
/// Feed it every batch; it returns what changed from the consumer's point of view. For a
/// snapshot or resync that means the difference with what it held before: puts for new or changed
/// keys, deletes for keys that are gone. So a consumer that applies the returned changes sees one
/// consistent sequence of states, even across resyncs and re-snapshots.
///
/// ```swift
/// var mirror = MirroredState()
/// for try await batch in client.watch(prefixes: ["door/"]) {
///     for change in mirror.apply(batch) { print(change.type, change.key) }
/// }
/// ```
public struct MirroredState: Sendable {
    /// The entries, by key.
    public private(set) var entries: [String: Entry] = [:]
    /// The revision the mirror is current with.
    public private(set) var revision: UInt64 = 0

    /// An empty mirror.
    public init() {}

    /// Applies a batch and returns the changes it made to the mirror, in key order for a snapshot
    /// or resync and in the batch's order otherwise.
    @discardableResult
    public mutating func apply(_ batch: WatchBatch) -> [Change] {
        revision = max(revision, batch.revision)
        if batch.kind.replacesState {
            return replace(with: batch)
        }
        for change in batch.changes {
            switch change.type {
            case .put: entries[change.key] = change.entry
            case .delete: entries[change.key] = nil
            }
        }
        return batch.changes
    }

    private mutating func replace(with batch: WatchBatch) -> [Change] {
        var next: [String: Entry] = [:]
        for change in batch.changes where change.type == .put {
            next[change.key] = change.entry
        }
        var changes: [Change] = []
        for (key, entry) in next where entries[key]?.modRevision != entry.modRevision {
            changes.append(.put(entry))
        }
        for key in entries.keys where next[key] == nil {
            changes.append(.delete(key, revision: batch.revision))
        }
        entries = next
        return changes.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
    }
}
