/// The one varint of the package: LEB128, 7 bits a byte, low bits first, as protobuf writes it.
/// The hand codecs (``ProtobufFieldWriter``, ``ProtobufFieldReader``) and the stored entries'
/// layout (the engine's `EntryBytes`) all read and write it here.
package enum Varint {
    /// The most bytes a varint of 64 bits takes.
    package static let maxSize = 10

    /// The bytes `value` takes: one per 7 bits, at least one.
    @inlinable
    package static func size(_ value: UInt64) -> Int {
        (64 - (value | 1).leadingZeroBitCount + 6) / 7
    }

    /// Writes `value` at `start`, which has room for ``size(_:)`` bytes; returns the byte after it.
    @inlinable
    package static func write(_ value: UInt64, to start: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8> {
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

    /// Reads the varint at `next`, which this program wrote (no bound is checked: use
    /// ``read(_:at:)`` for bytes from outside), and moves `next` past it.
    @inlinable @inline(__always)
    package static func readWritten(_ next: inout UnsafePointer<UInt8>) -> UInt64 {
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

    /// Reads the varint at `offset` of `bytes` and moves `offset` past it; nil, leaving `offset`
    /// wherever it stopped, when the bytes end first or the varint is longer than 64 bits allow.
    @inlinable
    package static func read(_ bytes: UnsafeRawBufferPointer, at offset: inout Int) -> UInt64? {
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 7 * maxSize, by: 7) {
            guard offset < bytes.count else { return nil }
            let byte = bytes[offset]
            offset += 1
            // The tenth byte holds the 64th bit and nothing more.
            if shift == 63 && byte > 1 { return nil }
            value |= UInt64(byte & 0x7f) << UInt64(shift)
            if byte < 0x80 { return value }
        }
        return nil
    }
}
