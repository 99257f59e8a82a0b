/// Every committed entry, found by key, and in key order. The entries' bytes sit in cells of
/// slabs an ``EntryArena`` shares out, and the index by key (``KeyIndex``) and the order
/// (``KeyOrder``) hold 4-byte handles to them, so that a key costs no object of its own and no
/// 8-byte references to one (D25).
/// The order holds the slabs too (``EntrySlabs``), so that a copy of it can be read without the
/// engine's lock.
///
/// A put is planned straight into one of the table's cells (``makeCell(byteCount:)``), which
/// ``set(_:hash:to:)`` then stores as it is; an entry made on its own (a transaction's, a
/// restore's, one read at start-up) is copied into a cell. The entries the table gives out hold
/// the slab their cell is in.
package struct EntryTable: Sendable {
    private var index: KeyIndex
    private(set) var order = KeyOrder()
    private var arena = EntryArena()
    /// Whether ``set(_:to:)`` notes what it changes, for ``changes``: on for a store that writes
    /// the current entries out in batches (SQLite's `entries` table), off by default.
    package var tracksChanges = false
    /// The keys deleted since ``forgetChanges()``, while it ``tracksChanges``; repeats allowed.
    private var deletedKeys: [String] = []
    /// Where in the order the entries of keys put lately went, by the low bits of their keys'
    /// hashes: an overwrite of a key put lately finds the entry it replaces there, without the
    /// order's search by key, which reads about ten entries, a cache miss each (D27). Made on the
    /// first overwrite.
    private var recentPlaces: [KeyOrder.Place] = []
    private static let recentPlaceCount = 4096

    /// An empty table with room for `capacity` entries without growing.
    package init(capacity: Int = 0) {
        index = KeyIndex(capacity: capacity)
    }

    /// How many keys the table holds.
    var count: Int { index.count }

    /// How many slabs the table's entries are in.
    var slabCount: Int { order.slabs.count }

    /// The entry stored under `key`.
    subscript(key: String) -> StoredEntry? {
        var key = key
        return key.withUTF8 { key in index.entry(key, in: order.slabs).map { order.slabs.entry($0) } }
    }

    /// The entry stored under the key with these UTF-8 bytes and this hash
    /// (``KeyIndex/hash(of:)-(UnsafeBufferPointer<UInt8>)``).
    func entry(_ key: UnsafeBufferPointer<UInt8>, hash: Int) -> StoredEntry? {
        index.entry(key, hash: hash, in: order.slabs).map { order.slabs.entry($0) }
    }

    /// The entry stored under `key`, whose hash (``KeyIndex/hash(of:)-(String)``) is `hash`.
    func entry(_ key: String, hash: Int) -> StoredEntry? {
        var key = key
        return key.withUTF8 { entry($0, hash: hash) }
    }

    /// Stores `entry` under its key, replacing the key's entry if there is one: a copy, unless
    /// it was made in one of the table's cells. Changes nothing ``changes`` reports.
    package mutating func insert(_ entry: StoredEntry) {
        insert(store(entry))
    }

    /// Stores a copy of the entry whose ``EntryBytes`` are the `count` bytes at `bytes`, replacing
    /// the key's entry if there is one.
    mutating func insert(copying bytes: UnsafePointer<UInt8>, count: Int) {
        insert(store(bytes, count: count))
    }

    private mutating func insert(_ handle: EntryHandle) {
        guard let replaced = index.update(with: handle, in: order.slabs) else { return order.insert(handle) }
        guard replaced != handle else { return }
        _ = order.replace(replaced, with: handle)
        arena.free(replaced, in: &order.slabs)
    }

    /// A cell of the table's for an entry of `byteCount` bytes, to write with
    /// ``EntryCell/write(key:value:numbers:)``, not yet under any key: ``set(_:hash:to:)`` then
    /// stores the entry without a copy. An entry made so and never set goes back with
    /// ``discard(_:)``.
    mutating func makeCell(byteCount: Int) -> EntryCell {
        let handle = arena.allocate(byteCount, in: &order.slabs)
        let entry = order.slabs.entry(handle)
        return EntryCell(slab: entry.slab, bytes: UnsafeMutablePointer(mutating: entry.bytes))
    }

    /// Gives back the cell of `entry`, made in a cell of ``makeCell(byteCount:)`` and never set
    /// under its key (a write planned but not committed, or one a later write of its group
    /// replaced). Whoever holds `entry` may go on reading it. Nothing for any other entry.
    mutating func discard(_ entry: StoredEntry) {
        guard let handle = order.slabs.handle(of: entry) else { return }
        arena.free(handle, in: &order.slabs)
    }

    /// A cell holding `entry`: its own when it was made in one of the table's cells, or else
    /// one holding a copy.
    private mutating func store(_ entry: StoredEntry) -> EntryHandle {
        order.slabs.handle(of: entry) ?? store(entry.bytes, count: entry.byteCount)
    }

    /// A cell holding a copy of the `count` bytes at `bytes`.
    private mutating func store(_ bytes: UnsafePointer<UInt8>, count: Int) -> EntryHandle {
        let handle = arena.allocate(count, in: &order.slabs)
        UnsafeMutablePointer(mutating: order.slabs.bytes(handle)).update(from: bytes, count: count)
        return handle
    }

    /// Stores `entry` under `key` (its own), or removes the key's entry when `entry` is nil;
    /// returns the entry it replaced or removed. An entry made in a cell of ``makeCell(byteCount:)``
    /// is stored as it is; any other, copied. `hash` is the key's
    /// (``KeyIndex/hash(of:)-(String)``) when the caller has it. Noted for ``changes`` while the
    /// table ``tracksChanges``.
    @discardableResult
    package mutating func set(_ key: String, hash: Int? = nil, to entry: StoredEntry?) -> StoredEntry? {
        if let entry {
            let handle = store(entry)
            guard let replaced = index.update(with: handle, hash: hash, marking: tracksChanges, in: order.slabs) else {
                order.insert(handle)
                return nil
            }
            // The key's own entry, given back to it: nothing changes, nothing goes back.
            if replaced == handle { return order.slabs.entry(handle) }
            replace(replaced, with: handle, hash: hash ?? KeyIndex.hash(of: key))
            // Held by the caller's copy, its cell is not reused until the caller lets go of it.
            let previous = order.slabs.entry(replaced)
            arena.free(replaced, in: &order.slabs)
            return previous
        }
        var key = key
        let removed = key.withUTF8 { key -> EntryHandle? in
            guard let removed = index.remove(key, hash: hash, in: order.slabs) else { return nil }
            order.remove(key)
            return removed
        }
        guard let removed else { return nil }
        if tracksChanges { deletedKeys.append(key) }
        let previous = order.slabs.entry(removed)
        arena.free(removed, in: &order.slabs)
        return previous
    }

    private mutating func replace(_ replaced: EntryHandle, with handle: EntryHandle, hash: Int) {
        if recentPlaces.isEmpty { recentPlaces = Array(repeating: .unknown, count: Self.recentPlaceCount) }
        let slot = hash & (Self.recentPlaceCount - 1)
        recentPlaces[slot] = order.replace(replaced, with: handle, hint: recentPlaces[slot])
    }

    /// What ``set(_:to:)`` changed since ``forgetChanges()`` (or since tracking began): the
    /// current entry of each key put, and the keys deleted. A key deleted, then put again, is in
    /// both: the deletion came first.
    ///
    /// It costs a pass over the index's tags (2 MB with a million keys), not a dictionary update
    /// per write, which is what a store that kept its own list of changed keys paid.
    package var changes: ChangedEntries {
        ChangedEntries(entries: index.marked.map { order.slabs.entry($0) }, deletedKeys: deletedKeys)
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
    var all: [StoredEntry] { index.all.map { order.slabs.entry($0) } }
}
