import Foundation

/// The keys of an ``EntryTable`` in byte order, so that the keys under a prefix are found without
/// looking at any other: a list, snapshot or resync costs what it returns.
///
/// A sorted sequence of sorted chunks of at most ``chunkCapacity`` keys (a B-tree of two levels):
/// a key is placed by a binary search over the chunks' first keys, then one within its chunk, and
/// adding or removing one moves at most a chunk's worth of keys. Keys added in order (start-up
/// reads the table in key order) fill the last chunk and start new ones.
struct KeyOrder: Sendable {
    /// Never empty ones: a chunk that loses its last key goes.
    private var chunks: [[String]] = []

    /// The most keys a chunk holds before it splits in two.
    static let chunkCapacity = 512

    /// Adds `key`, which the order does not hold.
    mutating func insert(_ key: String) {
        guard let last = chunks.last?.last else {
            chunks.append([key])
            return
        }
        if Self.compare(last, key) < 0 {
            // In order, as at start-up: fill the last chunk, then start another.
            if chunks[chunks.count - 1].count < Self.chunkCapacity {
                chunks[chunks.count - 1].append(key)
            } else {
                chunks.append([key])
            }
            return
        }
        // The last chunk whose first key does not sort after `key` (or the first chunk).
        let chunk = max(0, Self.upperBound(of: key, in: chunks.indices) { chunks[$0][0] } - 1)
        let position = Self.lowerBound(of: key, in: chunks[chunk].indices) { chunks[chunk][$0] }
        chunks[chunk].insert(key, at: position)
        if chunks[chunk].count > Self.chunkCapacity {
            let upperHalf = Array(chunks[chunk][(Self.chunkCapacity / 2)...])
            chunks[chunk].removeSubrange((Self.chunkCapacity / 2)...)
            chunks.insert(upperHalf, at: chunk + 1)
        }
    }

    /// Removes `key`, if the order holds it.
    mutating func remove(_ key: String) {
        guard let (chunk, position) = find(key) else { return }
        chunks[chunk].remove(at: position)
        if chunks[chunk].isEmpty { chunks.remove(at: chunk) }
    }

    /// How many keys it holds.
    var count: Int { chunks.reduce(0) { $0 + $1.count } }

    /// Calls `body` with the keys that start with `prefix`, in byte order, until it returns false.
    func forEachKey(withPrefix prefix: String, _ body: (String) -> Bool) {
        guard !chunks.isEmpty else { return }
        var chunk = max(0, Self.upperBound(of: prefix, in: chunks.indices) { chunks[$0][0] } - 1)
        var position = Self.lowerBound(of: prefix, in: chunks[chunk].indices) { chunks[chunk][$0] }
        while chunk < chunks.count {
            let keys = chunks[chunk]
            while position < keys.count {
                let key = keys[position]
                guard key.utf8.starts(with: prefix.utf8) else { return }
                guard body(key) else { return }
                position += 1
            }
            chunk += 1
            position = 0
        }
    }

    private func find(_ key: String) -> (chunk: Int, position: Int)? {
        guard !chunks.isEmpty else { return nil }
        let chunk = max(0, Self.upperBound(of: key, in: chunks.indices) { chunks[$0][0] } - 1)
        let position = Self.lowerBound(of: key, in: chunks[chunk].indices) { chunks[chunk][$0] }
        guard position < chunks[chunk].count, Self.compare(chunks[chunk][position], key) == 0 else { return nil }
        return (chunk, position)
    }

    /// Whether `a` sorts before `b` by their bytes, as SQLite's BINARY collation and the
    /// protocol's list order do.
    static func precedes(_ a: String, _ b: String) -> Bool {
        compare(a, b) < 0
    }

    /// The bytes of `a` against those of `b`: negative, zero or positive.
    static func compare(_ a: String, _ b: String) -> Int {
        var a = a
        var b = b
        return a.withUTF8 { a in
            b.withUTF8 { b in
                let common = min(a.count, b.count)
                if common > 0, let left = a.baseAddress, let right = b.baseAddress {
                    let result = memcmp(left, right, common)
                    if result != 0 { return Int(result) }
                }
                return a.count - b.count
            }
        }
    }

    /// The first index whose key does not sort before `key`.
    private static func lowerBound(of key: String, in range: Range<Int>, _ keyAt: (Int) -> String) -> Int {
        var low = range.lowerBound
        var high = range.upperBound
        while low < high {
            let middle = (low + high) / 2
            if compare(keyAt(middle), key) < 0 { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The first index whose key sorts after `key`.
    private static func upperBound(of key: String, in range: Range<Int>, _ keyAt: (Int) -> String) -> Int {
        var low = range.lowerBound
        var high = range.upperBound
        while low < high {
            let middle = (low + high) / 2
            if compare(keyAt(middle), key) <= 0 { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
