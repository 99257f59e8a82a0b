/// Every committed entry, found by key, and in key order. The entries carry their own keys, so
/// the index by key (``KeyIndex``) is a table of 8-byte references: a dictionary keyed by
/// `String` spends 16 more bytes per slot. The order (``KeyOrder``) holds the same references
/// sorted by key, to find the entries under a prefix without a scan and to read them from a
/// copy, without the engine's lock.
package struct EntryTable: Sendable {
    private var index: KeyIndex
    private(set) var order = KeyOrder()
    /// Whether ``set(_:to:)`` notes what it changes, for ``changes``: on for a store that writes
    /// the current entries out in batches (SQLite's `entries` table), off by default.
    package var tracksChanges = false
    /// The keys deleted since ``forgetChanges()``, while it ``tracksChanges``; repeats allowed.
    private var deletedKeys: [String] = []
    /// Where in the order the entries of keys put lately went, by the low bits of their keys'
    /// hashes: an overwrite of a key put lately finds the entry it replaces there, without the
    /// order's search by key, which reads about ten entries, a cache miss each (3.8% of syncd's
    /// samples under pipelined puts). Made on the first overwrite.
    private var recentPlaces: [KeyOrder.Place] = []
    private static let recentPlaceCount = 4096

    /// An empty table with room for `capacity` entries without growing.
    package init(capacity: Int = 0) {
        index = KeyIndex(capacity: capacity)
    }

    /// How many keys the table holds.
    var count: Int { index.count }

    /// The entry stored under `key`.
    subscript(key: String) -> StoredEntry? {
        var key = key
        return key.withUTF8 { index.entry($0) }
    }

    /// The entry stored under the key with these UTF-8 bytes and this hash
    /// (``KeyIndex/hash(of:)-(UnsafeBufferPointer<UInt8>)``).
    func entry(_ key: UnsafeBufferPointer<UInt8>, hash: Int) -> StoredEntry? {
        index.entry(key, hash: hash)
    }

    /// Stores `entry` under its key, replacing the key's entry if there is one.
    package mutating func insert(_ entry: StoredEntry) {
        if index.update(with: entry) == nil { order.insert(entry) } else { order.replace(with: entry) }
    }

    /// Stores `entry` under `key` (its own), or removes the key's entry when `entry` is nil;
    /// returns the entry it replaced or removed. `hash` is the key's
    /// (``KeyIndex/hash(of:)-(String)``) when the caller has it. Noted for ``changes`` while the
    /// table ``tracksChanges``.
    @discardableResult
    package mutating func set(_ key: String, hash: Int? = nil, to entry: StoredEntry?) -> StoredEntry? {
        if let entry {
            let replaced = index.update(with: entry, hash: hash, marking: tracksChanges)
            if let replaced {
                replace(replaced, with: entry, hash: hash ?? KeyIndex.hash(of: key))
            } else {
                order.insert(entry)
            }
            return replaced
        }
        var key = key
        guard let removed = key.withUTF8({ index.remove($0, hash: hash) }) else { return nil }
        order.remove(key)
        if tracksChanges { deletedKeys.append(key) }
        return removed
    }

    private mutating func replace(_ replaced: StoredEntry, with entry: StoredEntry, hash: Int) {
        if recentPlaces.isEmpty { recentPlaces = Array(repeating: .unknown, count: Self.recentPlaceCount) }
        let slot = hash & (Self.recentPlaceCount - 1)
        recentPlaces[slot] = order.replace(replaced, with: entry, hint: recentPlaces[slot])
    }

    /// What ``set(_:to:)`` changed since ``forgetChanges()`` (or since tracking began): the
    /// current entry of each key put, and the keys deleted. A key deleted, then put again, is in
    /// both: the deletion came first.
    ///
    /// It costs a pass over the index's tags (2 MB with a million keys), not a dictionary update
    /// per write, which is what a store that kept its own list of changed keys paid.
    package var changes: ChangedEntries {
        ChangedEntries(entries: index.marked, deletedKeys: deletedKeys)
    }

    /// Forgets what ``changes`` reports, once the store wrote it.
    package mutating func forgetChanges() {
        index.clearMarks()
        deletedKeys.removeAll()
    }

    /// The entries whose keys start with `prefix`, from the first at or after `start` on, in byte
    /// order of their keys; at most `limit`.
    package func entries(
        withPrefix prefix: String, from start: String = "", limit: Int? = nil, where isIncluded: KeyFilter? = nil
    ) -> [StoredEntry] {
        Self.entries(in: order, withPrefix: prefix, from: start, limit: limit, where: isIncluded)
    }

    /// The entries of `order` whose keys start with `prefix`, from the first at or after `start`
    /// on, that `isIncluded` lets through, in byte order of their keys; at most `limit`.
    static func entries(
        in order: KeyOrder, withPrefix prefix: String, from start: String = "", limit: Int? = nil, where isIncluded: KeyFilter? = nil
    ) -> [StoredEntry] {
        var found: [StoredEntry] = []
        if let limit, limit <= 0 { return found }
        order.forEach(withPrefix: prefix, from: start) { entry in
            if isIncluded?(entry.key) != false { found.append(entry) }
            return limit.map { found.count < $0 } ?? true
        }
        return found
    }

    /// Every entry, in no particular order.
    var all: some Sequence<StoredEntry> { index.all }
}
