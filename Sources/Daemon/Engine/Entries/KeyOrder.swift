import Foundation
import SharedStateWire

/// The entries of an ``EntryTable`` in byte order of their keys, so that the keys under a prefix
/// are found without looking at any other: a list, snapshot or resync costs what it returns.
///
/// A sorted sequence of sorted chunks of at most ``chunkCapacity`` entries (a B-tree of two
/// levels): an entry is placed by a binary search over the chunks' first keys, then one within
/// its chunk, and adding or removing one moves at most a chunk's worth of handles. Entries
/// added in order (start-up reads the table in key order) fill the last chunk and start new ones.
///
/// The chunks hold ``EntryHandle``s, 4 bytes an entry; the order holds the table's
/// ``EntrySlabs`` too, which turn them into entries.
///
/// A copy is a consistent view that costs nothing to take: the engine takes one under its lock
/// and reads a large prefix from it without the lock. The next write after such a copy copies
/// the list of chunks and the one chunk it changes, not the entries (D28), and the copy's slabs
/// keep every entry it names as it was (see ``EntryArena``).
///
/// `@unchecked Sendable`: for its ``EntrySlabs``, which the arena changes only while no copy of
/// the order holds them.
package struct KeyOrder: @unchecked Sendable {
    /// Never empty ones: a chunk that loses its last entry goes.
    private var chunks: [[UInt32]] = []
    /// Where the entries are: the table's, shared with every copy of the order.
    var slabs = EntrySlabs.make()

    /// The most entries a chunk holds before it splits in two.
    static let chunkCapacity = 512

    /// Adds the entry of `handle`, whose key the order does not hold.
    mutating func insert(_ handle: EntryHandle) {
        let entry = handle.raw
        guard let last = chunks.last?.last else {
            chunks.append([entry])
            return
        }
        let key = slabs.key(handle)
        if compare(last, key) < 0 {
            // In order, as at start-up: fill the last chunk, then start another.
            if chunks[chunks.count - 1].count < Self.chunkCapacity {
                chunks[chunks.count - 1].append(entry)
            } else {
                chunks.append([entry])
            }
            return
        }
        let (chunk, position) = place(of: key)
        chunks[chunk].insert(entry, at: position)
        if chunks[chunk].count > Self.chunkCapacity {
            let upperHalf = Array(chunks[chunk][(Self.chunkCapacity / 2)...])
            chunks[chunk].removeSubrange((Self.chunkCapacity / 2)...)
            chunks.insert(upperHalf, at: chunk + 1)
        }
    }

    /// Where an entry sits: its chunk, and its position in the chunk.
    struct Place {
        var chunk: Int32
        var position: Int32

        /// No place: an entry's place not known.
        static let unknown = Place(chunk: -1, position: -1)
    }

    /// Puts the entry of `handle` in the place of `replaced`, the entry the order holds for the
    /// same key, and returns that place. Looks at `hint` first, where `replaced` went when it was
    /// put there: it is still there unless entries were added or removed before it since, which
    /// a look at the hinted place tells, and then it is searched for by key.
    mutating func replace(_ replaced: EntryHandle, with handle: EntryHandle, hint: Place = .unknown) -> Place {
        let chunk = Int(hint.chunk)
        let position = Int(hint.position)
        if chunk >= 0, chunk < chunks.count, position < chunks[chunk].count, chunks[chunk][position] == replaced.raw {
            chunks[chunk][position] = handle.raw
            return hint
        }
        guard let (chunk, position) = find(slabs.key(handle)) else {
            assertionFailure("replacing an entry the order does not hold")
            insert(handle)
            return .unknown
        }
        chunks[chunk][position] = handle.raw
        return Place(chunk: Int32(chunk), position: Int32(position))
    }

    /// Removes the entry of `key`, if the order holds one.
    mutating func remove(_ key: UnsafeBufferPointer<UInt8>) {
        guard let (chunk, position) = find(key) else { return }
        chunks[chunk].remove(at: position)
        if chunks[chunk].isEmpty { chunks.remove(at: chunk) }
    }

    /// How many entries it holds.
    var count: Int { chunks.reduce(0) { $0 + $1.count } }

    /// How many entries have keys that start with `prefix`: two searches and a sum over the
    /// chunks between them, without visiting an entry.
    func count(withPrefix prefix: String) -> Int {
        guard !chunks.isEmpty else { return 0 }
        var bound = Array(prefix.utf8)
        let start = bound.withUnsafeBufferPointer { place(of: $0) }
        // Every key under the prefix sorts before the prefix with its last byte below 0xFF
        // raised by one; with none such, every key after the start is under it.
        while bound.last == 0xFF { bound.removeLast() }
        let end: (chunk: Int, position: Int)
        if bound.isEmpty {
            end = (chunks.count - 1, chunks[chunks.count - 1].count)
        } else {
            bound[bound.count - 1] += 1
            end = bound.withUnsafeBufferPointer { place(of: $0) }
        }
        if start.chunk == end.chunk { return end.position - start.position }
        var total = chunks[start.chunk].count - start.position + end.position
        for chunk in (start.chunk + 1)..<end.chunk { total += chunks[chunk].count }
        return total
    }

    /// Calls `body` with the entries whose keys start with `prefix`, in byte order of their keys,
    /// from the first key at or after `start` on, until it returns false.
    func forEach(withPrefix prefix: String, from start: String = "", _ body: (StoredEntry) -> Bool) {
        guard !chunks.isEmpty else { return }
        var prefix = prefix
        var start = start
        prefix.withUTF8 { prefix in
            var (chunk, position) = start.withUTF8 { start in place(of: KeyByteOrder.compare(start, prefix) > 0 ? start : prefix) }
            while chunk < chunks.count {
                let entries = chunks[chunk]
                while position < entries.count {
                    let handle = EntryHandle(raw: entries[position])
                    guard slabs.key(handle).starts(with: prefix) else { return }
                    guard body(slabs.entry(handle)) else { return }
                    position += 1
                }
                chunk += 1
                position = 0
            }
        }
    }

    /// Where an entry with `key` is, or would go: the chunk, and the first position in it whose
    /// key does not sort before `key`.
    private func place(of key: UnsafeBufferPointer<UInt8>) -> (chunk: Int, position: Int) {
        // The last chunk whose first key does not sort after `key` (or the first chunk).
        let chunk = max(0, Self.firstIndex(in: chunks.indices) { compare(chunks[$0][0], key) > 0 } - 1)
        let position = Self.firstIndex(in: chunks[chunk].indices) { compare(chunks[chunk][$0], key) >= 0 }
        return (chunk, position)
    }

    private func find(_ key: UnsafeBufferPointer<UInt8>) -> (chunk: Int, position: Int)? {
        guard !chunks.isEmpty else { return nil }
        let (chunk, position) = place(of: key)
        guard position < chunks[chunk].count, compare(chunks[chunk][position], key) == 0 else { return nil }
        return (chunk, position)
    }

    /// How the key of the entry `handle` names sorts against `key`.
    private func compare(_ handle: UInt32, _ key: UnsafeBufferPointer<UInt8>) -> Int {
        KeyByteOrder.compare(slabs.key(EntryHandle(raw: handle)), key)
    }

    /// The first index in `range` for which `isAtOrAfter` holds, which holds for every index
    /// after it too (`range.upperBound` when it holds for none).
    private static func firstIndex(in range: Range<Int>, where isAtOrAfter: (Int) -> Bool) -> Int {
        var low = range.lowerBound
        var high = range.upperBound
        while low < high {
            let middle = (low + high) / 2
            if isAtOrAfter(middle) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
