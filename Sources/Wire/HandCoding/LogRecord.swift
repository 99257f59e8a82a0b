import Foundation

/// The change log's record of a revision: a `WatchEvent` of kind `CHANGES` without a watch id,
/// the bytes a watch event of the whole revision shares (``WatchEventFrame`` prefixes a watch id
/// to send them), and a commit group's records framed as its store asks (``Framing``). Written
/// by hand, byte for byte as SwiftProtobuf writes them (fields in number order, zero values left
/// out), in one allocation of the exact size: the engine says what each revision holds
/// (`LogRecordEncoding`), this type lays the bytes out; read back through SwiftProtobuf.
package enum LogRecord {
    /// What a record holds.
    package struct Contents: Sendable {
        package var revision: UInt64
        /// The session that wrote the revision (0: syncd itself).
        package var writerSession: UInt64
        /// The cause its write carried.
        package var cause: String
        package var changes: [Change]
    }

    /// Decodes a record.
    ///
    /// - Throws: SwiftProtobuf's error when the bytes are not a `WatchEvent`.
    package static func decode(_ record: Data) throws -> Contents {
        let event = try Sharedstate_V1_WatchEvent(serializedBytes: record)
        return Contents(
            revision: event.revision, writerSession: event.writerSession, cause: event.cause,
            changes: event.changes.map { Change(wireValue: $0) })
    }
}

// MARK: Writing, by hand (D13, D14)

extension LogRecord {
    /// A stored entry's numbers, as a record's changes carry them.
    package struct Numbers: Sendable {
        package var version: UInt64
        package var createRevision: UInt64
        package var modRevision: UInt64
        package var ephemeralSession: UInt64

        package init(version: UInt64, createRevision: UInt64, modRevision: UInt64, ephemeralSession: UInt64) {
            self.version = version
            self.createRevision = createRevision
            self.modRevision = modRevision
            self.ephemeralSession = ephemeralSession
        }
    }

    /// The record's fields besides its changes.
    package struct Header {
        package var revision: UInt64
        /// The session that wrote the revision (0: syncd itself).
        package var writerSession: UInt64
        package var cause: String

        package init(revision: UInt64, writerSession: UInt64, cause: String) {
            self.revision = revision
            self.writerSession = writerSession
            self.cause = cause
        }
    }

    typealias Writer = ProtobufFieldWriter

    /// One record in one allocation of the exact size: `size` bytes, written by `write`
    /// (``writeLonePut(_:key:value:_:to:)`` or ``writeChanges(_:_:to:)``).
    package static func encode(size: Int, _ write: (inout ProtobufFieldWriter) -> Void) -> Data {
        var record = Data(count: size)
        record.withUnsafeMutableBytes { buffer in
            var writer = Writer(base: buffer.baseAddress!)
            write(&writer)
            assert(writer.offset == size, "a record's size was computed wrong")
        }
        return record
    }

    /// How a store keeps a commit group's records together: each record as one occurrence of a
    /// message's repeated bytes field `field`, so that the group is that message, and a group of
    /// one as its record alone. The store declares it (SQLite's journal: a `LogSegment`), and
    /// ``framed(count:size:write:as:)`` lays a group out in it as its records are encoded.
    package struct Framing: Sendable, Equatable {
        /// The repeated field each record is an occurrence of.
        package var field: UInt8

        package init(field: UInt8) {
            self.field = field
        }
    }

    /// The records of a commit group's `count` consecutive revisions in one allocation, framed
    /// as `framing` says, and each record's range in it. `size(i)` is record `i`'s size,
    /// `write(i, &writer)` writes it.
    package static func framed(
        count: Int, size: (Int) -> Int, write: (Int, inout ProtobufFieldWriter) -> Void, as framing: Framing
    ) -> (body: Data, records: [Range<Int>]) {
        if count == 1 {
            let record = encode(size: size(0)) { write(0, &$0) }
            return (record, [record.indices])
        }
        var sizes: [Int] = []
        sizes.reserveCapacity(count)
        var total = 0
        for index in 0..<count {
            sizes.append(size(index))
            total += 1 + Writer.lengthDelimitedSize(sizes[index])
        }
        var records: [Range<Int>] = []
        records.reserveCapacity(count)
        var body = Data(count: total)
        body.withUnsafeMutableBytes { buffer in
            var writer = Writer(base: buffer.baseAddress!)
            for index in 0..<count {
                writer.key(framing.field, .lengthDelimited)
                writer.varint(UInt64(sizes[index]))
                let start = writer.offset
                write(index, &writer)
                records.append(start..<writer.offset)
                assert(writer.offset - start == sizes[index], "a record's size was computed wrong")
            }
            assert(writer.offset == total, "the group's size was computed wrong")
        }
        return (body, records)
    }

    /// The size of the record of a revision whose one change is a put of an entry with a key of
    /// `keyBytes`, a value of `valueBytes` and `numbers`.
    package static func lonePutSize(_ header: Header, keyBytes: Int, valueBytes: Int, _ numbers: Numbers) -> Int {
        headerSize(header) + 1 + Writer.lengthDelimitedSize(1 + Writer.lengthDelimitedSize(entrySize(keyBytes, valueBytes, numbers)))
    }

    /// Writes the record of a revision whose one change is a put of `key`'s entry, read where
    /// it lies.
    package static func writeLonePut(
        _ header: Header, key: UnsafeBufferPointer<UInt8>, value: UnsafeRawBufferPointer, _ numbers: Numbers,
        to writer: inout ProtobufFieldWriter
    ) {
        typealias Fields = WireFields.WatchEvent
        if header.revision != 0 { writer.varintField(Fields.revision, header.revision) }
        let size = entrySize(key.count, value.count, numbers)
        writer.key(Fields.changes, .lengthDelimited)
        writer.varint(UInt64(1 + Writer.lengthDelimitedSize(size)))
        writer.key(WireFields.Change.entry, .lengthDelimited)
        writer.varint(UInt64(size))
        writeEntry(key: key, value: value, numbers, to: &writer)
        writeTrailer(header, to: &writer)
    }

    /// The size of the record of a revision with `changes`.
    package static func changesSize(_ header: Header, _ changes: [Change]) -> Int {
        var size = headerSize(header)
        for index in changes.indices { size += 1 + Writer.lengthDelimitedSize(changeSize(changes[index])) }
        return size
    }

    /// Writes the record of a revision with `changes`.
    package static func writeChanges(_ header: Header, _ changes: [Change], to writer: inout ProtobufFieldWriter) {
        typealias Fields = WireFields.WatchEvent
        if header.revision != 0 { writer.varintField(Fields.revision, header.revision) }
        for index in changes.indices {
            let isDelete = changes[index].type == .delete
            let size = entrySize(changes[index].entry)
            writer.key(Fields.changes, .lengthDelimited)
            writer.varint(UInt64((isDelete ? 2 : 0) + 1 + Writer.lengthDelimitedSize(size)))
            if isDelete { writer.varintField(WireFields.Change.type, 1) }
            writer.key(WireFields.Change.entry, .lengthDelimited)
            writer.varint(UInt64(size))
            let entry = changes[index].entry
            let numbers = Numbers(
                version: entry.version, createRevision: entry.createRevision, modRevision: entry.modRevision,
                ephemeralSession: entry.ephemeralSession)
            withUTF8(of: entry.key) { key in
                entry.value.withUnsafeBytes { value in writeEntry(key: key, value: value, numbers, to: &writer) }
            }
        }
        writeTrailer(header, to: &writer)
    }

    /// The revision's, the writer's and the cause's fields.
    private static func headerSize(_ header: Header) -> Int {
        let causeBytes = header.cause.utf8.count
        return Writer.varintFieldSize(header.revision) + Writer.varintFieldSize(header.writerSession)
            + (causeBytes > 0 ? 1 + Writer.lengthDelimitedSize(causeBytes) : 0)
    }

    /// The fields after the changes: the writer's session and the cause.
    private static func writeTrailer(_ header: Header, to writer: inout ProtobufFieldWriter) {
        if header.writerSession != 0 { writer.varintField(WireFields.WatchEvent.writerSession, header.writerSession) }
        withUTF8(of: header.cause) { cause in
            if !cause.isEmpty { writer.bytesField(WireFields.WatchEvent.cause, UnsafeRawBufferPointer(cause)) }
        }
    }

    private static func changeSize(_ change: Change) -> Int {
        (change.type == .delete ? 2 : 0) + 1 + Writer.lengthDelimitedSize(entrySize(change.entry))
    }

    private static func entrySize(_ entry: Entry) -> Int {
        entrySize(
            entry.key.utf8.count, entry.value.count,
            Numbers(
                version: entry.version, createRevision: entry.createRevision, modRevision: entry.modRevision,
                ephemeralSession: entry.ephemeralSession))
    }

    private static func entrySize(_ keyBytes: Int, _ valueBytes: Int, _ numbers: Numbers) -> Int {
        var size = 0
        if keyBytes > 0 { size += 1 + Writer.lengthDelimitedSize(keyBytes) }
        if valueBytes > 0 { size += 1 + Writer.lengthDelimitedSize(valueBytes) }
        return size + Writer.varintFieldSize(numbers.version) + Writer.varintFieldSize(numbers.createRevision)
            + Writer.varintFieldSize(numbers.modRevision) + Writer.varintFieldSize(numbers.ephemeralSession)
    }

    private static func writeEntry(
        key: UnsafeBufferPointer<UInt8>, value: UnsafeRawBufferPointer, _ numbers: Numbers, to writer: inout ProtobufFieldWriter
    ) {
        typealias Fields = WireFields.Entry
        if !key.isEmpty { writer.bytesField(Fields.key, UnsafeRawBufferPointer(key)) }
        if !value.isEmpty { writer.bytesField(Fields.value, value) }
        if numbers.version != 0 { writer.varintField(Fields.version, numbers.version) }
        if numbers.createRevision != 0 { writer.varintField(Fields.createRevision, numbers.createRevision) }
        if numbers.modRevision != 0 { writer.varintField(Fields.modRevision, numbers.modRevision) }
        if numbers.ephemeralSession != 0 { writer.varintField(Fields.ephemeralSession, numbers.ephemeralSession) }
    }

    /// Calls `body` with the UTF-8 bytes of `text`, in place when its storage is contiguous (a
    /// native string's always is).
    private static func withUTF8<Result>(of text: String, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let result = text.utf8.withContiguousStorageIfAvailable(body) { return result }
        var text = text
        return text.withUTF8(body)
    }
}
