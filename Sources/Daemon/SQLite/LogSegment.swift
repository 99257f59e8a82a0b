import Foundation
import SharedStateWire
import SyncEngine

/// One row of the change log: the consecutive revisions of one commit group, stored together so
/// that a group costs the store one row, however many revisions it holds.
///
/// A row of one revision is that revision's record alone (``EncodedRevision/LogRecord``), as every
/// row was before segments; a row of several is a `LogSegment` message (see the .proto): each
/// record as field 1, in order. Which of the two a row is follows from its first and last
/// revision, so rows written before segments read as they are.
package enum LogSegment {
    /// A row's records as the engine frames them when it encodes a group together (see
    /// ``SQLiteBackend/recordFraming``): each record as field 1 of a `LogSegment`.
    package static let framing = LogRecord.Framing(field: WireFields.LogSegment.revisions)

    /// The row's body for `revisions`, consecutive and not empty.
    package static func body(of revisions: some Collection<CommittedRevision>) -> Data {
        guard revisions.count > 1 else { return revisions.first?.logRecord ?? Data() }
        return rowBody(revisions.lazy.map(\.logRecord))
    }

    /// The revisions of a row holding `first` through `last`, in order.
    ///
    /// - Throws: ``DecodingError`` when the body is not what a row of those revisions holds.
    package static func revisions(in body: Data, first: UInt64, last: UInt64) throws -> [CommittedRevision] {
        guard first <= last else { throw DecodingError(first: first, last: last, reason: "its first revision is after its last") }
        if first == last { return [try CommittedRevision(logRecord: body)] }
        let records = try records(in: body, first: first, last: last)
        let revisions = try records.map { try CommittedRevision(logRecord: $0) }
        // Compared without building the range: damaged columns may name billions of revisions.
        let isExact =
            revisions.first?.revision == first && revisions.last?.revision == last
            && zip(revisions, revisions.dropFirst()).allSatisfy { $1.revision &- $0.revision == 1 }
        guard isExact else {
            throw DecodingError(first: first, last: last, reason: "revisions \(revisions.map(\.revision)) inside")
        }
        return revisions
    }

    /// `segments`, consecutive, as rows of the change log: consecutive segments merged into rows
    /// of up to `mergedBytes`, and a segment larger than `maxBytes` split between its revisions.
    /// A move inserts one row for many commit groups: SQLite's cost per row, not per byte, was
    /// most of a move's.
    ///
    /// - Throws: ``DecodingError`` when a body is not a segment of its revisions.
    package static func rows(of segments: [JournalScan.Segment], mergedBytes: Int, maxBytes: Int) throws -> [JournalScan.Segment] {
        var rows: [JournalScan.Segment] = []
        var scratch: [UInt8] = []
        try forEachRow(of: segments, mergedBytes: mergedBytes, maxBytes: maxBytes, scratch: &scratch) { first, last, body in
            rows.append(JournalScan.Segment(first: first, last: last, body: Data(body)))
        }
        return rows
    }

    /// Calls `body` with each of the rows ``rows(of:mergedBytes:maxBytes:)`` makes, in order,
    /// without keeping them: a merged row is written into `scratch`, whose room is kept from row
    /// to row and from one move to the next (so that a move does not allocate, map and zero fresh
    /// memory for every row), and a row of one segment is its body.
    ///
    /// - Throws: ``DecodingError`` when a body is not a segment of its revisions, and what
    ///   `body` throws.
    package static func forEachRow(
        of segments: [JournalScan.Segment], mergedBytes: Int, maxBytes: Int, scratch: inout [UInt8],
        _ body: (_ first: UInt64, _ last: UInt64, _ bytes: UnsafeRawBufferPointer) throws -> Void
    ) throws {
        let pieces = try segments.flatMap { segment in segment.body.count > maxBytes ? try split(segment, maxBytes: maxBytes) : [segment] }
        for run in chunks(of: pieces, bytes: mergedBytes) {
            let first = run[run.startIndex].first
            let last = run[run.endIndex - 1].last
            if run.count == 1 {
                try run[run.startIndex].body.withUnsafeBytes { try body(first, last, $0) }
                continue
            }
            let size = run.reduce(0) { total, segment in
                total
                    + (segment.first == segment.last ? 1 + ProtobufFieldWriter.lengthDelimitedSize(segment.body.count) : segment.body.count)
            }
            if scratch.count < size { scratch = [UInt8](repeating: 0, count: size) }
            try scratch.withUnsafeMutableBytes { buffer in
                merge(run, into: buffer.baseAddress!, size: size)
                try body(first, last, UnsafeRawBufferPointer(rebasing: buffer[..<size]))
            }
        }
    }

    /// `segments` in consecutive runs of at most `bytes` bytes of bodies (at least one segment
    /// each), in order: the rows a move merges, and the transactions it moves them in.
    package static func chunks(of segments: [JournalScan.Segment], bytes: Int) -> [ArraySlice<JournalScan.Segment>] {
        var chunks: [ArraySlice<JournalScan.Segment>] = []
        var start = segments.startIndex
        var size = 0
        for index in segments.indices {
            if index > start, size + segments[index].body.count > bytes {
                chunks.append(segments[start..<index])
                start = index
                size = 0
            }
            size += segments[index].body.count
        }
        if start < segments.endIndex { chunks.append(segments[start...]) }
        return chunks
    }

    /// Writes the body of one row holding `run`'s segments, `size` bytes, at `base`: a segment of
    /// several revisions is already its records as fields, one of a single revision is the
    /// record, written here as a field.
    private static func merge(_ run: ArraySlice<JournalScan.Segment>, into base: UnsafeMutableRawPointer, size: Int) {
        var writer = ProtobufFieldWriter(base: base)
        for segment in run {
            segment.body.withUnsafeBytes { bytes in
                if segment.first == segment.last {
                    writer.bytesField(framing.field, bytes)
                } else if let source = bytes.baseAddress, bytes.count > 0 {
                    (base + writer.offset).copyMemory(from: source, byteCount: bytes.count)
                    writer.offset += bytes.count
                }
            }
        }
        assert(writer.offset == size, "the merged row's size was computed wrong")
    }

    /// `segment` as rows of at most `maxBytes` each, split between its revisions (a revision's
    /// record larger than that is a row of its own); the segment itself when it fits.
    ///
    /// - Throws: ``DecodingError`` when the body is not a segment of its revisions.
    package static func split(_ segment: JournalScan.Segment, maxBytes: Int) throws -> [JournalScan.Segment] {
        guard segment.body.count > maxBytes, segment.first < segment.last else { return [segment] }
        let records = try records(in: segment.body, first: segment.first, last: segment.last)
        guard records.count == Int(segment.last - segment.first + 1) else {
            throw DecodingError(first: segment.first, last: segment.last, reason: "\(records.count) records inside")
        }
        var rows: [JournalScan.Segment] = []
        var start = 0
        var size = 0
        func close(_ end: Int) {
            let first = segment.first + UInt64(start)
            let last = segment.first + UInt64(end - 1)
            let body = end - start == 1 ? records[start] : rowBody(records[start..<end])
            rows.append(JournalScan.Segment(first: first, last: last, body: body))
        }
        for index in records.indices {
            let field = 1 + ProtobufFieldWriter.lengthDelimitedSize(records[index].count)
            if index > start, size + field > maxBytes {
                close(index)
                start = index
                size = 0
            }
            size += field
        }
        close(records.count)
        return rows
    }

    /// The records a segment's body holds, in order.
    private static func records(in body: Data, first: UInt64, last: UInt64) throws -> [Data] {
        try body.withUnsafeBytes { bytes throws(DecodingError) -> [Data] in
            var reader = ProtobufFieldReader(bytes)
            var records: [Data] = []
            while !reader.isAtEnd {
                guard reader.nextTag() == ProtobufFieldReader.tag(framing.field, .lengthDelimited),
                    let record = reader.lengthDelimited()
                else { throw DecodingError(first: first, last: last, reason: "a field that is not a revision's record") }
                records.append(Data(record))
            }
            return records
        }
    }

    /// A segment's body of `records`, in order: each as field 1.
    private static func rowBody(_ records: some Collection<Data>) -> Data {
        let size = records.reduce(0) { $0 + 1 + ProtobufFieldWriter.lengthDelimitedSize($1.count) }
        var body = Data(count: size)
        body.withUnsafeMutableBytes { buffer in
            var writer = ProtobufFieldWriter(base: buffer.baseAddress!)
            for record in records { record.withUnsafeBytes { writer.bytesField(framing.field, $0) } }
            assert(writer.offset == size, "the segment's size was computed wrong")
        }
        return body
    }

    /// A row whose body does not hold the revisions its columns name.
    package struct DecodingError: Error, CustomStringConvertible {
        package let first: UInt64
        package let last: UInt64
        package let reason: String

        package var description: String {
            "the change log's row of revisions \(first)–\(last) is damaged: \(reason)"
        }
    }
}
