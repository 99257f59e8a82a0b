import Foundation
import SharedStateWire

/// The change log's record of a revision — a `WatchEvent` of kind `CHANGES` without a watch id —
/// encoded by hand, byte for byte as SwiftProtobuf encodes it (fields in number order, zero values
/// left out), in one allocation of the exact size.
///
/// The writer encodes every revision it commits, where SwiftProtobuf's generic visitors take a
/// size pass and a writing pass, each through generic metadata looked up at run time (D13).
/// `LogRecordEncodingTests` checks the bytes against SwiftProtobuf's for all kinds of changes.
package enum LogRecordEncoding {
    /// The record of `changes` at `revision`, written by `writerSession` for `cause`.
    static func record(revision: UInt64, changes: RevisionChanges, writerSession: UInt64, cause: String) -> Data {
        withUTF8(of: cause) { cause in
            let size = recordSize(revision: revision, changes: changes, writerSession: writerSession, causeBytes: cause.count)
            var record = Data(count: size)
            record.withUnsafeMutableBytes { buffer in
                var writer = Writer(base: buffer.baseAddress!)
                writeRecord(revision: revision, changes: changes, writerSession: writerSession, cause: cause, to: &writer)
                assert(writer.offset == size, "the record's size was computed wrong")
            }
            return record
        }
    }

    /// A revision to encode with others of its commit group.
    struct Revision {
        var revision: UInt64
        var changes: RevisionChanges
        var origin: WriteOrigin
    }

    /// The records of a commit group's consecutive revisions, in one allocation: the group's body
    /// in the change log's segment format (each record as field 1 of a `LogSegment`; a group of
    /// one is its record alone), and each record's range in it.
    ///
    /// The revisions are read in place, by index: one copied out would retain its changes and
    /// origin, and each change its key and value.
    static func segment(of revisions: [Revision]) -> (body: Data, records: [Range<Int>]) {
        if revisions.count == 1 {
            let only = revisions.startIndex
            let record = record(
                revision: revisions[only].revision, changes: revisions[only].changes, writerSession: revisions[only].origin.session,
                cause: revisions[only].origin.cause)
            return (record, [record.indices])
        }
        var sizes: [Int] = []
        sizes.reserveCapacity(revisions.count)
        var total = 0
        for index in revisions.indices {
            let size = recordSize(
                revision: revisions[index].revision, changes: revisions[index].changes, writerSession: revisions[index].origin.session,
                causeBytes: revisions[index].origin.cause.utf8.count)
            sizes.append(size)
            total += 1 + Writer.lengthDelimitedSize(size)
        }
        var records: [Range<Int>] = []
        records.reserveCapacity(revisions.count)
        var body = Data(count: total)
        body.withUnsafeMutableBytes { buffer in
            var writer = Writer(base: buffer.baseAddress!)
            for index in revisions.indices {
                writer.key(WireFields.LogSegment.revisions, .lengthDelimited)
                writer.varint(UInt64(sizes[index]))
                let start = writer.offset
                withUTF8(of: revisions[index].origin.cause) { cause in
                    writeRecord(
                        revision: revisions[index].revision, changes: revisions[index].changes,
                        writerSession: revisions[index].origin.session, cause: cause, to: &writer)
                }
                records.append(start..<writer.offset)
                assert(writer.offset - start == sizes[index], "a record's size was computed wrong")
            }
            assert(writer.offset == total, "the segment's size was computed wrong")
        }
        return (body, records)
    }

    /// Calls `body` with the UTF-8 bytes of `text`, in place when its storage is contiguous (a
    /// native string's always is).
    private static func withUTF8<Result>(of text: String, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let result = text.utf8.withContiguousStorageIfAvailable(body) { return result }
        var text = text
        return text.withUTF8(body)
    }

    private static func recordSize(revision: UInt64, changes: RevisionChanges, writerSession: UInt64, causeBytes: Int) -> Int {
        var size = Writer.varintFieldSize(revision) + Writer.varintFieldSize(writerSession)
        if let put = changes.lonePut {
            size += 1 + Writer.lengthDelimitedSize(changeSize(of: put.entry))
        } else if let list = changes.list {
            for index in list.indices { size += 1 + Writer.lengthDelimitedSize(changeSize(list[index])) }
        }
        if causeBytes > 0 { size += 1 + Writer.lengthDelimitedSize(causeBytes) }
        return size
    }

    private static func writeRecord(
        revision: UInt64, changes: RevisionChanges, writerSession: UInt64, cause: UnsafeBufferPointer<UInt8>, to writer: inout Writer
    ) {
        typealias Fields = WireFields.WatchEvent
        if revision != 0 { writer.varintField(Fields.revision, revision) }
        if let put = changes.lonePut {
            // Read from the entry as stored: its numbers decoded once, its bytes in place.
            let numbers = put.entry.numbers
            put.entry.withKeyAndValueBytes { key, value in
                let entrySize = entrySize(keyBytes: key.count, valueBytes: value.count, numbers)
                writer.key(Fields.changes, .lengthDelimited)
                writer.varint(UInt64(1 + Writer.lengthDelimitedSize(entrySize)))
                writer.key(WireFields.Change.entry, .lengthDelimited)
                writer.varint(UInt64(entrySize))
                writeEntry(key: key, value: UnsafeRawBufferPointer(value), numbers, to: &writer)
            }
        } else if let list = changes.list {
            for index in list.indices {
                let isDelete = list[index].type == .delete
                let entrySize = entrySize(list[index].entry)
                writer.key(Fields.changes, .lengthDelimited)
                writer.varint(UInt64((isDelete ? 2 : 0) + 1 + Writer.lengthDelimitedSize(entrySize)))
                if isDelete { writer.varintField(WireFields.Change.type, 1) }
                writer.key(WireFields.Change.entry, .lengthDelimited)
                writer.varint(UInt64(entrySize))
                write(list[index].entry, to: &writer)
            }
        }
        if writerSession != 0 { writer.varintField(Fields.writerSession, writerSession) }
        if !cause.isEmpty { writer.bytesField(Fields.cause, UnsafeRawBufferPointer(cause)) }
    }

    private typealias Writer = ProtobufFieldWriter

    private static func changeSize(_ change: Change) -> Int {
        (change.type == .delete ? 2 : 0) + 1 + Writer.lengthDelimitedSize(entrySize(change.entry))
    }

    private static func changeSize(of put: StoredEntry) -> Int {
        put.withKeyAndValueBytes { key, value in
            1 + Writer.lengthDelimitedSize(entrySize(keyBytes: key.count, valueBytes: value.count, put.numbers))
        }
    }

    private static func entrySize(_ entry: Entry) -> Int {
        entrySize(
            keyBytes: entry.key.utf8.count, valueBytes: entry.value.count,
            StoredEntry.Numbers(
                version: entry.version, createRevision: entry.createRevision, modRevision: entry.modRevision,
                ephemeralSession: entry.ephemeralSession))
    }

    private static func entrySize(keyBytes: Int, valueBytes: Int, _ numbers: StoredEntry.Numbers) -> Int {
        var size = 0
        if keyBytes > 0 { size += 1 + Writer.lengthDelimitedSize(keyBytes) }
        if valueBytes > 0 { size += 1 + Writer.lengthDelimitedSize(valueBytes) }
        return size + Writer.varintFieldSize(numbers.version) + Writer.varintFieldSize(numbers.createRevision)
            + Writer.varintFieldSize(numbers.modRevision) + Writer.varintFieldSize(numbers.ephemeralSession)
    }

    private static func write(_ entry: Entry, to writer: inout Writer) {
        let numbers = StoredEntry.Numbers(
            version: entry.version, createRevision: entry.createRevision, modRevision: entry.modRevision,
            ephemeralSession: entry.ephemeralSession)
        withUTF8(of: entry.key) { key in
            entry.value.withUnsafeBytes { value in writeEntry(key: key, value: value, numbers, to: &writer) }
        }
    }

    private static func writeEntry(
        key: UnsafeBufferPointer<UInt8>, value: UnsafeRawBufferPointer, _ numbers: StoredEntry.Numbers, to writer: inout Writer
    ) {
        typealias Fields = WireFields.Entry
        if !key.isEmpty { writer.bytesField(Fields.key, UnsafeRawBufferPointer(key)) }
        if !value.isEmpty { writer.bytesField(Fields.value, value) }
        if numbers.version != 0 { writer.varintField(Fields.version, numbers.version) }
        if numbers.createRevision != 0 { writer.varintField(Fields.createRevision, numbers.createRevision) }
        if numbers.modRevision != 0 { writer.varintField(Fields.modRevision, numbers.modRevision) }
        if numbers.ephemeralSession != 0 { writer.varintField(Fields.ephemeralSession, numbers.ephemeralSession) }
    }
}
