import SharedStateWire

/// The entries a commit group's writes leave behind, each key's last (nil: deleted), in the order
/// the keys were first written: what planning reads before the published table, and what
/// publishing then applies to it.
///
/// Each key keeps the hash ``KeyIndex`` uses, computed once when the key is first written or
/// looked up: the group's lookups, its own update and the published table's update all use it.
/// A `[String: StoredEntry?]` did this before, and hashed each key's `String` twice more, besides
/// the table's hash of its bytes; its storage took a generic lookup at run time to be sized.
package struct GroupEntries: Sendable {
    /// A key the group wrote, with its hash, and its entry after the group's writes so far.
    package struct Written: Sendable {
        let key: String
        let hash: Int
        var entry: StoredEntry?
    }

    /// In the order the keys were first written.
    private(set) var written: [Written] = []
    /// The entries later writes of the group replaced: their revisions still hold them, but no
    /// key will, so the cells the table made them in go back once the group is published.
    private(set) var replaced: [StoredEntry] = []
    /// Once the group writes more than ``scannedCount`` keys: an open-addressing table (linear
    /// probing, at most half full) of indices into ``written``, plus one; 0 marks an empty slot.
    private var slots: [Int32] = []

    /// Up to this many keys, a lookup compares hashes in order, which costs less than a table.
    private static let scannedCount = 16

    /// No keys yet, with room for `capacity` of them.
    init(capacity: Int = 0) {
        written.reserveCapacity(capacity)
    }

    /// Whether the group wrote no key.
    var isEmpty: Bool { written.isEmpty }

    /// The entry the group left under the key with `hash` and the bytes of `key`: `.some(nil)` when
    /// it deleted the key, nil when it did not write it.
    func entry(_ key: UnsafeBufferPointer<UInt8>, hash: Int) -> StoredEntry?? {
        index(of: key, hash: hash).map { written[$0].entry }
    }

    /// Records `entry` (nil: deleted) as `key`'s, whose hash is `hash`.
    mutating func set(_ key: String, hash: Int, to entry: StoredEntry?) {
        var key = key
        if let index = key.withUTF8({ index(of: $0, hash: hash) }) {
            if let earlier = written[index].entry { replaced.append(earlier) }
            written[index].entry = entry
            return
        }
        written.append(Written(key: key, hash: hash, entry: entry))
        if written.count > Self.scannedCount {
            if written.count * 2 > slots.count { rebuildSlots() } else { insertSlot(for: written.count - 1) }
        }
    }

    private func index(of key: UnsafeBufferPointer<UInt8>, hash: Int) -> Int? {
        if slots.isEmpty {
            for index in written.indices where written[index].hash == hash && Self.has(written[index].key, key) { return index }
            return nil
        }
        let mask = slots.count - 1
        var slot = hash & mask
        while slots[slot] != 0 {
            let index = Int(slots[slot]) - 1
            if written[index].hash == hash && Self.has(written[index].key, key) { return index }
            slot = (slot + 1) & mask
        }
        return nil
    }

    private static func has(_ key: String, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var key = key
        return key.withUTF8 { KeyByteOrder.compare($0, bytes) == 0 }
    }

    private mutating func rebuildSlots() {
        var size = 64
        while size < written.count * 4 { size *= 2 }
        slots = Array(repeating: 0, count: size)
        for index in written.indices { insertSlot(for: index) }
    }

    private mutating func insertSlot(for index: Int) {
        let mask = slots.count - 1
        var slot = written[index].hash & mask
        while slots[slot] != 0 { slot = (slot + 1) & mask }
        slots[slot] = Int32(index + 1)
    }
}
