import Foundation
import SharedStateWire

/// The entries of an ``EntryTable`` found by key: an open-addressing hash table of
/// ``EntryHandle``s (linear probing, at most half full), looked up by a key's UTF-8 bytes; the
/// table's ``EntrySlabs`` turn a handle into its entry's bytes.
///
/// Each slot has a tag beside it, 7 bits of its entry's hash: a probe compares the key only of
/// an entry whose tag matches, so passing an occupied slot reads a byte, not the entry (a cache
/// miss each with a million keys, many of them while start-up builds the index; D26). The tag's
/// eighth bit marks an entry changed since the marks were last cleared, for a
/// store that writes the current entries out in batches (see ``EntryTable/changes``): the byte is
/// written with every update anyway.
///
/// A `Set<StoredEntry>` did this before, but a set finds an element only by an element: each
/// lookup made an entry of its key to look with, an allocation per write planned.
struct KeyIndex: Sendable {
    /// A power of two long; 0 marks an empty slot.
    private var slots: [UInt32]
    /// Each slot's tag (see ``tag(of:)``) and mark (``changedMark``), at the same index;
    /// meaningless for an empty slot.
    private var tags: [UInt8]
    /// How many entries it holds.
    private(set) var count = 0

    /// An empty index with room for `capacity` entries before it grows.
    init(capacity: Int = 0) {
        var size = 8
        while size < capacity * 2 { size *= 2 }
        slots = Array(repeating: 0, count: size)
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

    /// The hash of the key of the entry `handle` names. Computed, not kept: 8 more bytes an entry
    /// are 8 MB with a million keys, and a put hashes its key twice either way.
    private static func hash(of handle: UInt32, in slabs: EntrySlabs) -> Int {
        hash(of: slabs.key(EntryHandle(raw: handle)))
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
    func entry(_ key: UnsafeBufferPointer<UInt8>, hash: Int? = nil, in slabs: EntrySlabs) -> EntryHandle? {
        let (slot, found) = place(of: key, hash: hash ?? Self.hash(of: key), in: slabs)
        return found ? EntryHandle(raw: slots[slot]) : nil
    }

    /// Stores `handle` under its entry's key, whose hash is `hash` when the caller has it,
    /// marked changed when `marking` (a key marked before stays marked); returns the handle it
    /// replaced.
    @discardableResult
    mutating func update(with handle: EntryHandle, hash: Int? = nil, marking: Bool = false, in slabs: EntrySlabs) -> EntryHandle? {
        let key = slabs.key(handle)
        let hash = hash ?? Self.hash(of: key)
        let (slot, found) = place(of: key, hash: hash, in: slabs)
        let replaced = slots[slot]
        slots[slot] = handle.raw
        let mark = marking ? Self.changedMark : found ? tags[slot] & Self.changedMark : 0
        tags[slot] = Self.tag(of: hash) | mark
        if !found {
            count += 1
            if count * 2 > slots.count { grow(in: slabs) }
        }
        return found ? EntryHandle(raw: replaced) : nil
    }

    /// Removes the entry stored under `key`, whose hash is `hash` when the caller has it, and
    /// returns its handle.
    mutating func remove(_ key: UnsafeBufferPointer<UInt8>, hash: Int? = nil, in slabs: EntrySlabs) -> EntryHandle? {
        let (slot, found) = place(of: key, hash: hash ?? Self.hash(of: key), in: slabs)
        guard found else { return nil }
        let removed = slots[slot]
        // Move back each later entry of the run that may sit in the hole, so that every entry
        // stays reachable from its home slot without a gap.
        let mask = slots.count - 1
        var hole = slot
        var next = (slot + 1) & mask
        while slots[next] != 0 {
            let moved = slots[next]
            let home = Self.hash(of: moved, in: slabs) & mask
            if (next &- home) & mask >= (next &- hole) & mask {
                slots[hole] = moved
                tags[hole] = tags[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        slots[hole] = 0
        count -= 1
        return EntryHandle(raw: removed)
    }

    /// Every entry's handle, in no particular order.
    var all: some Sequence<EntryHandle> { slots.lazy.filter { $0 != 0 }.map { EntryHandle(raw: $0) } }

    /// The handles of the entries marked changed, in no particular order.
    var marked: [EntryHandle] {
        var found: [EntryHandle] = []
        tags.withUnsafeBufferPointer { tags in
            for slot in tags.indices where tags[slot] & Self.changedMark != 0 && slots[slot] != 0 {
                found.append(EntryHandle(raw: slots[slot]))
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
    private func place(of key: UnsafeBufferPointer<UInt8>, hash: Int, in slabs: EntrySlabs) -> (slot: Int, found: Bool) {
        let mask = slots.count - 1
        let tag = Self.tag(of: hash)
        var slot = hash & mask
        while slots[slot] != 0 {
            if tags[slot] & ~Self.changedMark == tag, KeyByteOrder.compare(slabs.key(EntryHandle(raw: slots[slot])), key) == 0 {
                return (slot, true)
            }
            slot = (slot + 1) & mask
        }
        return (slot, false)
    }

    private mutating func grow(in slabs: EntrySlabs) {
        let (old, oldTags) = (slots, tags)
        slots = Array(repeating: 0, count: old.count * 2)
        tags = Array(repeating: 0, count: old.count * 2)
        let mask = slots.count - 1
        for index in old.indices where old[index] != 0 {
            var slot = Self.hash(of: old[index], in: slabs) & mask
            while slots[slot] != 0 { slot = (slot + 1) & mask }
            slots[slot] = old[index]
            tags[slot] = oldTags[index]
        }
    }
}
