import NIOCore

/// Protobuf's base-128 varints, for the bytes syncd writes by hand on its hot paths (change-log
/// records, a revision's frame per watcher, write answers) instead of through SwiftProtobuf.
enum Varint {
    /// The bytes `value` takes: one per 7 bits, at least one.
    static func size(_ value: UInt64) -> Int {
        (64 - (value | 1).leadingZeroBitCount + 6) / 7
    }

    /// The bytes of a varint field whose number is below 16: none for 0, which proto3 leaves out.
    static func fieldSize(_ value: UInt64) -> Int {
        value == 0 ? 0 : 1 + size(value)
    }

    /// The bytes of a length-delimited field's length and its `count` bytes of contents.
    static func lengthDelimitedSize(_ count: Int) -> Int {
        size(UInt64(count)) + count
    }

    /// Writes `value` at the end of `buffer`.
    static func write(_ value: UInt64, to buffer: inout ByteBuffer) {
        var value = value
        while value >= 0x80 {
            buffer.writeInteger(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        buffer.writeInteger(UInt8(value))
    }
}
