/// How a stored entry's bytes are laid out, wherever they are kept (see ``StoredEntry``):
///
///     key's length · key · value's length · version · create revision · mod revision · session · value
///
/// Every length and number is a LEB128 varint: a 100-byte value under a 12-byte key at a
/// revision below two million takes 122 bytes. The key comes first, so that the key order's
/// search, which reads keys and nothing else, finds it a byte or two from the entry's start.
enum EntryBytes {
    // The varint of ``Varint``, byte for byte (EntryBytesTests), written here again: every read
    // of an entry's numbers goes through it, and the daemon's modules, built without the run-time
    // exclusivity checks, do not inline Varint's functions from SharedStateWire (the release
    // binary called `Varint.readWritten` from 222 places, 2.5% of syncd's CPU under C writers; D44).

    /// How many bytes `value` takes as a varint: one per 7 bits, at least one.
    @inline(__always)
    static func count(_ value: UInt64) -> Int { (64 - (value | 1).leadingZeroBitCount + 6) / 7 }

    /// How many bytes an entry with these lengths and numbers takes.
    static func count(key: Int, value: Int, numbers: StoredEntry.Numbers) -> Int {
        count(UInt64(key)) + key + count(UInt64(value)) + numbers.encodedCount + value
    }

    /// Writes `value` as a varint at `start`; returns the byte after it.
    @inline(__always)
    static func write(_ value: UInt64, to start: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8> {
        var next = start
        var value = value
        while value >= 0x80 {
            next.pointee = UInt8(truncatingIfNeeded: value) | 0x80
            next += 1
            value >>= 7
        }
        next.pointee = UInt8(value)
        return next + 1
    }

    /// Reads the varint at `next`, and moves `next` past it.
    @inline(__always)
    static func read(_ next: inout UnsafePointer<UInt8>) -> UInt64 {
        let first = next.pointee
        next += 1
        if first < 0x80 { return UInt64(first) }
        var value = UInt64(first & 0x7F)
        var shift: UInt64 = 7
        while true {
            let byte = next.pointee
            next += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
    }

    /// Writes an entry at `start`, which has room for ``count(key:value:numbers:)`` bytes.
    static func write(
        key: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, numbers: StoredEntry.Numbers,
        to start: UnsafeMutablePointer<UInt8>
    ) {
        var next = write(UInt64(key.count), to: start)
        if let base = key.baseAddress { next.initialize(from: base, count: key.count) }
        next = write(UInt64(value.count), to: next + key.count)
        next = numbers.write(to: next)
        if let base = value.baseAddress { next.initialize(from: base, count: value.count) }
    }

    /// The key of the entry at `start`.
    @inline(__always)
    static func key(at start: UnsafePointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        var next = start
        let count = Int(read(&next))
        return UnsafeBufferPointer(start: next, count: count)
    }

    /// The value's length and where the numbers of the entry at `start` begin.
    private static func afterKey(at start: UnsafePointer<UInt8>) -> (valueCount: Int, numbers: UnsafePointer<UInt8>) {
        let key = key(at: start)
        var next = key.baseAddress! + key.count
        let valueCount = Int(read(&next))
        return (valueCount, next)
    }

    /// Where the numbers of the entry at `start` begin.
    static func numbers(at start: UnsafePointer<UInt8>) -> UnsafePointer<UInt8> {
        afterKey(at: start).numbers
    }

    /// The value of the entry at `start`.
    static func value(at start: UnsafePointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        var (valueCount, next) = afterKey(at: start)
        for _ in 0..<4 { _ = read(&next) }
        return UnsafeBufferPointer(start: next, count: valueCount)
    }

    /// How many bytes the entry at `start` takes.
    static func byteCount(at start: UnsafePointer<UInt8>) -> Int {
        let value = value(at: start)
        return value.baseAddress! + value.count - start
    }
}
