#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The one order of keys in SharedState: by their UTF-8 bytes, as SQLite's `BINARY` collation has
/// them. Lists and snapshots return keys in it, and syncd keeps its entries in it.
public enum KeyByteOrder {
    /// Whether `key` sorts before `other`.
    @inlinable
    public static func precedes(_ key: String, _ other: String) -> Bool {
        var key = key
        var other = other
        return key.withUTF8 { key in other.withUTF8 { other in compare(key, other) < 0 } }
    }

    /// The bytes of `a` against those of `b`: negative, zero or positive.
    @inlinable
    public static func compare(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        let common = min(a.count, b.count)
        if common > 0, let left = a.baseAddress, let right = b.baseAddress {
            let result = memcmp(left, right, common)
            if result != 0 { return Int(result) }
        }
        return a.count - b.count
    }
}
