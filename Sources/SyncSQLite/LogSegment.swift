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
    /// The row's body for `revisions`, consecutive and not empty.
    package static func body(of revisions: some Collection<CommittedRevision>) -> Data {
        guard revisions.count > 1 else { return revisions.first?.logRecord ?? Data() }
        let size = revisions.reduce(0) { $0 + 1 + ProtobufFieldWriter.lengthDelimitedSize($1.logRecord.count) }
        var body = Data(count: size)
        body.withUnsafeMutableBytes { buffer in
            var writer = ProtobufFieldWriter(base: buffer.baseAddress!)
            for revision in revisions {
                revision.logRecord.withUnsafeBytes { writer.bytesField(WireFields.LogSegment.revisions, $0) }
            }
            assert(writer.offset == size, "the segment's size was computed wrong")
        }
        return body
    }

    /// The revisions of a row holding `first` through `last`, in order.
    ///
    /// - Throws: ``DecodingError`` when the body is not what a row of those revisions holds.
    package static func revisions(in body: Data, first: UInt64, last: UInt64) throws -> [CommittedRevision] {
        guard first <= last else { throw DecodingError(first: first, last: last, reason: "its first revision is after its last") }
        if first == last { return [try CommittedRevision(logRecord: body)] }
        let records = try body.withUnsafeBytes { bytes throws(DecodingError) -> [Data] in
            var reader = ProtobufFieldReader(bytes)
            var records: [Data] = []
            while !reader.isAtEnd {
                guard reader.nextTag() == ProtobufFieldReader.tag(WireFields.LogSegment.revisions, .lengthDelimited),
                    let record = reader.lengthDelimited()
                else { throw DecodingError(first: first, last: last, reason: "a field that is not a revision's record") }
                records.append(Data(record))
            }
            return records
        }
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
