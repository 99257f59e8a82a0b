import Foundation
import SharedStateWire

/// The change log's record of a revision — a `WatchEvent` of kind `CHANGES` without a watch id —
/// encoded by hand, byte for byte as SwiftProtobuf encodes it (fields in number order, zero values
/// left out), in one allocation of the exact size.
///
/// The writer encodes every revision it commits: through SwiftProtobuf's generic visitors that
/// was a tenth of syncd's CPU under a write load. `LogRecordEncodingTests` checks the bytes
/// against SwiftProtobuf's for all kinds of changes.
enum LogRecordEncoding {
    /// The record of `changes` at `revision`, written by `writerSession` for `cause`.
    static func record(revision: UInt64, changes: [Change], writerSession: UInt64, cause: String) -> Data {
        var cause = cause
        return cause.withUTF8 { cause in
            var size = 0
            if revision != 0 { size += 1 + varintSize(revision) }
            for change in changes { size += 1 + lengthDelimitedSize(changeSize(change)) }
            if writerSession != 0 { size += 1 + varintSize(writerSession) }
            if !cause.isEmpty { size += 1 + lengthDelimitedSize(cause.count) }

            var record = Data(count: size)
            record.withUnsafeMutableBytes { buffer in
                var writer = Writer(base: buffer.baseAddress!)
                if revision != 0 { writer.varintField(3, revision) }
                for change in changes {
                    writer.tag(4, lengthDelimited: true)
                    writer.varint(UInt64(changeSize(change)))
                    if change.type == .delete { writer.varintField(1, 1) }
                    writer.tag(2, lengthDelimited: true)
                    writer.varint(UInt64(entrySize(change.entry)))
                    writer.entry(change.entry)
                }
                if writerSession != 0 { writer.varintField(6, writerSession) }
                if !cause.isEmpty { writer.bytesField(7, UnsafeRawBufferPointer(cause)) }
                assert(writer.offset == size, "the record's size was computed wrong")
            }
            return record
        }
    }

    private static func changeSize(_ change: Change) -> Int {
        (change.type == .delete ? 2 : 0) + 1 + lengthDelimitedSize(entrySize(change.entry))
    }

    private static func entrySize(_ entry: Entry) -> Int {
        var size = 0
        let keyBytes = entry.key.utf8.count
        if keyBytes > 0 { size += 1 + lengthDelimitedSize(keyBytes) }
        if !entry.value.isEmpty { size += 1 + lengthDelimitedSize(entry.value.count) }
        return size + varintFieldSize(entry.version) + varintFieldSize(entry.createRevision)
            + varintFieldSize(entry.modRevision) + varintFieldSize(entry.ephemeralSession)
    }

    /// The bytes of a varint field of a field number below 16; none for 0.
    private static func varintFieldSize(_ value: UInt64) -> Int {
        value == 0 ? 0 : 1 + varintSize(value)
    }

    /// The bytes of a length-delimited field's length and contents.
    private static func lengthDelimitedSize(_ count: Int) -> Int {
        varintSize(UInt64(count)) + count
    }

    private static func varintSize(_ value: UInt64) -> Int {
        // 1 byte per 7 bits, at least one.
        (64 - (value | 1).leadingZeroBitCount + 6) / 7
    }

    /// Writes fields into memory sized for them.
    private struct Writer {
        let base: UnsafeMutableRawPointer
        var offset = 0

        mutating func byte(_ value: UInt8) {
            base.storeBytes(of: value, toByteOffset: offset, as: UInt8.self)
            offset += 1
        }

        mutating func varint(_ value: UInt64) {
            var value = value
            while value >= 0x80 {
                byte(UInt8(truncatingIfNeeded: value) | 0x80)
                value >>= 7
            }
            byte(UInt8(value))
        }

        /// A field number below 16 with its wire type: varint (0) or length-delimited (2).
        mutating func tag(_ field: UInt8, lengthDelimited: Bool) {
            byte(field << 3 | (lengthDelimited ? 2 : 0))
        }

        mutating func varintField(_ field: UInt8, _ value: UInt64) {
            tag(field, lengthDelimited: false)
            varint(value)
        }

        mutating func bytesField(_ field: UInt8, _ bytes: UnsafeRawBufferPointer) {
            tag(field, lengthDelimited: true)
            varint(UInt64(bytes.count))
            if let source = bytes.baseAddress, bytes.count > 0 {
                (base + offset).copyMemory(from: source, byteCount: bytes.count)
                offset += bytes.count
            }
        }

        mutating func entry(_ entry: Entry) {
            var key = entry.key
            key.withUTF8 { key in
                if !key.isEmpty { bytesField(1, UnsafeRawBufferPointer(key)) }
            }
            if !entry.value.isEmpty { entry.value.withUnsafeBytes { bytesField(2, $0) } }
            if entry.version != 0 { varintField(3, entry.version) }
            if entry.createRevision != 0 { varintField(4, entry.createRevision) }
            if entry.modRevision != 0 { varintField(5, entry.modRevision) }
            if entry.ephemeralSession != 0 { varintField(6, entry.ephemeralSession) }
        }
    }
}
