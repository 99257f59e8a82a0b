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
            var size = Varint.fieldSize(revision) + Varint.fieldSize(writerSession)
            for change in changes { size += 1 + Varint.lengthDelimitedSize(changeSize(change)) }
            if !cause.isEmpty { size += 1 + Varint.lengthDelimitedSize(cause.count) }

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
        (change.type == .delete ? 2 : 0) + 1 + Varint.lengthDelimitedSize(entrySize(change.entry))
    }

    private static func entrySize(_ entry: Entry) -> Int {
        var size = 0
        let keyBytes = entry.key.utf8.count
        if keyBytes > 0 { size += 1 + Varint.lengthDelimitedSize(keyBytes) }
        if !entry.value.isEmpty { size += 1 + Varint.lengthDelimitedSize(entry.value.count) }
        return size + Varint.fieldSize(entry.version) + Varint.fieldSize(entry.createRevision)
            + Varint.fieldSize(entry.modRevision) + Varint.fieldSize(entry.ephemeralSession)
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
