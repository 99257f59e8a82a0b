import Foundation
import SwiftProtobuf
import Testing

@testable import SharedStateWire

/// The package's one varint (``Varint``), against SwiftProtobuf's: the same bytes for every
/// length, the same value read back, and bytes from outside refused where they end early or
/// overflow 64 bits.
@Suite struct VarintTests {
    /// A value of every varint length, and the edges around each.
    static let values: [UInt64] = [
        0, 1, 127, 128, 255, 300, 16_383, 16_384, 1 << 21, (1 << 28) - 1, 1 << 35, 1 << 42, 1 << 49, 1 << 56, 1 << 63, .max,
    ]

    @Test(arguments: values)
    func writesWhatSwiftProtobufWritesAndReadsItBack(value: UInt64) throws {
        // SwiftProtobuf's varint: a uint64 field's bytes after its one-byte key (0 is left out).
        let reference = value == 0 ? [UInt8(0)] : Array((try Google_Protobuf_UInt64Value(value).serializedBytes() as [UInt8]).dropFirst())
        #expect(Varint.size(value) == reference.count)
        var written = [UInt8](repeating: 0xAA, count: Varint.maxSize + 1)
        let end = written.withUnsafeMutableBufferPointer { buffer in Varint.write(value, to: buffer.baseAddress!) - buffer.baseAddress! }
        #expect(end == reference.count)
        #expect(Array(written.prefix(end)) == reference)
        #expect(written[end] == 0xAA, "wrote past its size")
        written.withUnsafeBufferPointer { buffer in
            var next = UnsafePointer(buffer.baseAddress!)
            #expect(Varint.readWritten(&next) == value)
            #expect(next - buffer.baseAddress! == end)
        }
        var offset = 0
        #expect(reference.withUnsafeBytes { Varint.read($0, at: &offset) } == value)
        #expect(offset == reference.count)
    }

    @Test func bytesFromOutsideAreRefusedWhereTheyEndEarlyOrOverflow() {
        func read(_ bytes: [UInt8]) -> UInt64? {
            var offset = 0
            return bytes.withUnsafeBytes { Varint.read($0, at: &offset) }
        }
        #expect(read([]) == nil)
        #expect(read([0x80]) == nil)
        #expect(read([0xFF, 0xFF]) == nil)
        // Ten bytes whose last holds more than the 64th bit, and eleven bytes.
        #expect(read(Array(repeating: 0xFF, count: 9) + [0x02]) == nil)
        #expect(read(Array(repeating: 0xFF, count: 9) + [0x01]) == .max)
        #expect(read(Array(repeating: 0x80, count: 10) + [0x00]) == nil)
    }
}
