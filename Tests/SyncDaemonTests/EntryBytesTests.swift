import Testing

@testable import SharedStateWire
@testable import SyncEngine

/// The stored entries' varint (``EntryBytes``), kept in the engine so that it is inlined, is the
/// package's one format (``Varint``): the same size, the same bytes, read back the same.
@Suite struct EntryBytesTests {
    @Test func itsVarintIsVarintsByteForByte() {
        let values: [UInt64] = [
            0, 1, 127, 128, 255, 300, 16_383, 16_384, 1 << 21, (1 << 28) - 1, 1 << 35, 1 << 42, 1 << 49, 1 << 56, 1 << 63, .max,
        ]
        for value in values {
            #expect(EntryBytes.count(value) == Varint.size(value), "\(value)")
            var ours = [UInt8](repeating: 0xAA, count: Varint.maxSize + 1)
            var theirs = ours
            let ourEnd = ours.withUnsafeMutableBufferPointer { EntryBytes.write(value, to: $0.baseAddress!) - $0.baseAddress! }
            let theirEnd = theirs.withUnsafeMutableBufferPointer { Varint.write(value, to: $0.baseAddress!) - $0.baseAddress! }
            #expect(ourEnd == theirEnd && ours == theirs, "\(value)")
            ours.withUnsafeBufferPointer { buffer in
                var next = UnsafePointer(buffer.baseAddress!)
                #expect(EntryBytes.read(&next) == value)
                #expect(next - buffer.baseAddress! == ourEnd)
            }
        }
    }
}
