/// Every committed entry, found by key. The entries carry their own keys, so the table is a set
/// of 8-byte references: a dictionary keyed by `String` spends 16 more bytes per slot, and keeps
/// about twice as many slots as entries.
struct EntryTable: Sendable {
    private var entries: Set<StoredEntry>

    /// An empty table with room for `capacity` entries without growing.
    init(capacity: Int = 0) {
        entries = Set(minimumCapacity: capacity)
    }

    /// How many keys the table holds.
    var count: Int { entries.count }

    /// The entry stored under `key`.
    subscript(key: String) -> StoredEntry? {
        entries.firstIndex(of: .probe(key)).map { entries[$0] }
    }

    /// Stores `entry` under its key, replacing the key's entry if there is one.
    mutating func insert(_ entry: StoredEntry) {
        entries.update(with: entry)
    }

    /// Stores `entry` under `key` (its own), or removes the key's entry when `entry` is nil;
    /// returns the entry it replaced or removed.
    @discardableResult
    mutating func set(_ key: String, to entry: StoredEntry?) -> StoredEntry? {
        if let entry {
            entries.update(with: entry)
        } else {
            entries.remove(.probe(key))
        }
    }

    /// Every entry, in no particular order.
    var all: Set<StoredEntry> { entries }
}
