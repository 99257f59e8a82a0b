/// The entries an ``EntryTable`` changed since it last forgot its changes: what a store that
/// writes the current entries out in batches (SQLite's `entries` table) writes next.
package struct ChangedEntries: Sendable {
    /// The current entry of each key put, in no particular order.
    package var entries: [StoredEntry]
    /// The keys deleted, in order, with repeats: delete them before writing ``entries``, which
    /// hold the keys put again since.
    package var deletedKeys: [String]

    package init(entries: [StoredEntry], deletedKeys: [String]) {
        self.entries = entries
        self.deletedKeys = deletedKeys
    }
}
