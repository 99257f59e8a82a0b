import Foundation
import SharedStateWire

/// The entries of an ``EntryTable`` found by key: an open-addressing hash table of references
/// (linear probing, at most half full), looked up by a key's UTF-8 bytes.
///
/// Each slot has a tag beside it, 7 bits of its entry's hash: a probe compares the key only of
/// an entry whose tag matches, so passing an occupied slot reads a byte, not the entry (a cache
/// miss each, with a million keys: building the index at start-up was a fifth of the time to
/// ready). The tag's eighth bit marks an entry changed since the marks were last cleared, for a
/// store that writes the current entries out in batches (see ``EntryTable/changes``): the byte is
/// written with every update anyway.
///
/// A `Set<StoredEntry>` did this before, but a set finds an element only by an element: each
/// lookup made an entry of its key to look with, an allocation per write planned.
struct KeyIndex: Sendable {
    /// A power of two long; nil marks an empty slot.
    private var slots: [StoredEntry?]
    /// Each slot's tag (see ``tag(of:)``) and mark (``changedMark``), at the same index;
    /// meaningless for an empty slot.
    private var tags: [UInt8]
    /// How many entries it holds.
    private(set) var count = 0

    /// An empty index with room for `capacity` entries before it grows.
    init(capacity: Int = 0) {
        var size = 8
        while size < capacity * 2 { size *= 2 }
        slots = Array(repeating: nil, count: size)
        tags = Array(repeating: 0, count: size)
    }

    /// The bits of `hash` a slot keeps: its top 7, which the slot's number (its low bits) does
    /// not already tell.
    private static func tag(of hash: Int) -> UInt8 { UInt8(truncatingIfNeeded: hash >> (Int.bitWidth - 7)) & ~changedMark }

    /// The bit of a slot's tag byte that marks its entry changed.
    private static let changedMark: UInt8 = 0x80

    /// The hash of a key's UTF-8 bytes (seeded per process).
    static func hash(of key: UnsafeBufferPointer<UInt8>) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: UnsafeRawBufferPointer(key))
        return hasher.finalize()
    }

    /// The hash of `entry`'s key. Computed, not kept in the entry: 8 more bytes put a 100-byte
    /// value's entry in the next `malloc` size class (16 MB more with a million keys), and a put
    /// hashes its key twice either way.
    private static func hash(of entry: StoredEntry) -> Int {
        entry.withKeyBytes { hash(of: $0) }
    }

    /// The hash of `key`'s UTF-8 bytes.
    static func hash(of key: String) -> Int {
        var key = key
        return key.withUTF8 { hash(of: $0) }
    }

    /// Whether two keys have the same UTF-8 bytes, the equality the index hashes by (`==` of
    /// `String`s is canonical equivalence); compared in place, with `memcmp`.
    static func sameBytes(_ first: String, _ second: String) -> Bool {
        guard first.utf8.count == second.utf8.count else { return false }
        let compared = first.utf8.withContiguousStorageIfAvailable { first in
            second.utf8.withContiguousStorageIfAvailable { second in
                first.count == 0 || memcmp(first.baseAddress!, second.baseAddress!, first.count) == 0
            }
        }
        return (compared ?? nil) ?? first.utf8.elementsEqual(second.utf8)
    }

    /// The entry stored under `key`, whose ``hash(of:)-(UnsafeBufferPointer<UInt8>)`` is `hash`
    /// when the caller has it.
    func entry(_ key: UnsafeBufferPointer<UInt8>, hash: Int? = nil) -> StoredEntry? {
        let (slot, found) = place(of: key, hash: hash ?? Self.hash(of: key))
        return found ? slots[slot] : nil
    }

    /// Stores `entry` under its key, whose hash is `hash` when the caller has it, marked changed
    /// when `marking` (a key marked before stays marked); returns the entry it replaced.
    @discardableResult
    mutating func update(with entry: StoredEntry, hash: Int? = nil, marking: Bool = false) -> StoredEntry? {
        let hash = hash ?? Self.hash(of: entry)
        let (slot, found) = entry.withKeyBytes { place(of: $0, hash: hash) }
        let replaced = slots[slot]
        slots[slot] = entry
        let mark = marking ? Self.changedMark : found ? tags[slot] & Self.changedMark : 0
        tags[slot] = Self.tag(of: hash) | mark
        if !found {
            count += 1
            if count * 2 > slots.count { grow() }
        }
        return found ? replaced : nil
    }

    /// Removes the entry stored under `key`, whose hash is `hash` when the caller has it, and
    /// returns it.
    mutating func remove(_ key: UnsafeBufferPointer<UInt8>, hash: Int? = nil) -> StoredEntry? {
        let (slot, found) = place(of: key, hash: hash ?? Self.hash(of: key))
        guard found, let removed = slots[slot] else { return nil }
        // Move back each later entry of the run that may sit in the hole, so that every entry
        // stays reachable from its home slot without a gap.
        let mask = slots.count - 1
        var hole = slot
        var next = (slot + 1) & mask
        while let moved = slots[next] {
            let home = Self.hash(of: moved) & mask
            if (next &- home) & mask >= (next &- hole) & mask {
                slots[hole] = moved
                tags[hole] = tags[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        slots[hole] = nil
        count -= 1
        return removed
    }

    /// Every entry, in no particular order.
    var all: some Sequence<StoredEntry> { slots.lazy.compactMap { $0 } }

    /// The entries marked changed, in no particular order.
    var marked: [StoredEntry] {
        var found: [StoredEntry] = []
        tags.withUnsafeBufferPointer { tags in
            for slot in tags.indices where tags[slot] & Self.changedMark != 0 {
                if let entry = slots[slot] { found.append(entry) }
            }
        }
        return found
    }

    /// Clears every entry's mark.
    mutating func clearMarks() {
        tags.withUnsafeMutableBufferPointer { tags in
            for slot in tags.indices { tags[slot] &= ~Self.changedMark }
        }
    }

    /// The slot holding `key`'s entry (found), or the empty one where it would go.
    private func place(of key: UnsafeBufferPointer<UInt8>, hash: Int) -> (slot: Int, found: Bool) {
        let mask = slots.count - 1
        let tag = Self.tag(of: hash)
        var slot = hash & mask
        while let entry = slots[slot] {
            if tags[slot] & ~Self.changedMark == tag, entry.withKeyBytes({ KeyByteOrder.compare($0, key) == 0 }) { return (slot, true) }
            slot = (slot + 1) & mask
        }
        return (slot, false)
    }

    private mutating func grow() {
        let (old, oldTags) = (slots, tags)
        slots = Array(repeating: nil, count: old.count * 2)
        tags = Array(repeating: 0, count: old.count * 2)
        let mask = slots.count - 1
        for index in old.indices {
            guard let entry = old[index] else { continue }
            var slot = Self.hash(of: entry) & mask
            while slots[slot] != nil { slot = (slot + 1) & mask }
            slots[slot] = entry
            tags[slot] = oldTags[index]
        }
    }
}
