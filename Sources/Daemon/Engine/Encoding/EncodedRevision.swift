import Foundation
import NIOCore
import SharedStateWire

/// A committed revision in the protocol's encoding, made once and shared by the change log and
/// every watcher.
///
/// The change log's row *is* the revision's encoded `WatchEvent` (without a watch id): a replay
/// sends rows as they are stored, and a live delivery sends the bytes it stored. The disk format
/// is therefore the wire schema's `WatchEvent`, whose evolution rules (new fields optional, numbers
/// never reused) keep old rows readable; ARCHITECTURE.md says so too.
package struct EncodedRevision: Sendable {
    /// An encoded `WatchEvent` of kind `CHANGES` without a watch id.
    package typealias LogRecord = Data

    /// The revision.
    let revision: UInt64
    /// The session that wrote the revision (0: syncd itself), and the cause its write carried.
    let writerSession: UInt64
    let cause: String
    /// The change log's row, and the body of every frame that carries all of the changes.
    let logRecord: LogRecord

    init(revision: UInt64, changes: RevisionChanges, writerSession: UInt64 = 0, cause: String = "") {
        self.revision = revision
        self.writerSession = writerSession
        self.cause = cause
        self.logRecord = LogRecordEncoding.record(revision: revision, changes: changes, writerSession: writerSession, cause: cause)
    }

    /// Decodes a row of the change log; returns it with its changes.
    static func decode(_ logRecord: LogRecord) throws -> (EncodedRevision, [Change]) {
        let event = try Sharedstate_V1_WatchEvent(serializedBytes: logRecord)
        let encoded = EncodedRevision(
            revision: event.revision, writerSession: event.writerSession, cause: event.cause, logRecord: logRecord)
        return (encoded, event.changes.map { Change(wireValue: $0) })
    }

    /// A revision whose record is already encoded (see ``LogRecordEncoding/segment(of:)``).
    init(revision: UInt64, writerSession: UInt64, cause: String, logRecord: LogRecord) {
        self.revision = revision
        self.writerSession = writerSession
        self.cause = cause
        self.logRecord = logRecord
    }

    /// The frame telling watch `watchID` about every change of this revision, built from the
    /// encoded event without encoding it again: protobuf lets the `watch_id` field be written in
    /// front of the others, so each watcher costs a few header bytes and a copy.
    func frame(forWatch watchID: UInt64, allocator: ByteBufferAllocator) -> ByteBuffer {
        typealias Writer = ProtobufFieldWriter
        let eventLength = 1 + Writer.varintSize(watchID) + logRecord.count
        let frameLength = 1 + Writer.lengthDelimitedSize(eventLength)
        var buffer = allocator.buffer(capacity: 4 + frameLength)  // the length, then the frame
        buffer.writeInteger(UInt32(frameLength))
        buffer.writeProtobufFields(maximumBytes: 1 + 10 + 1 + 10) { writer in
            writer.key(WireFields.ServerFrame.event, .lengthDelimited)
            writer.varint(UInt64(eventLength))
            writer.varintField(WireFields.WatchEvent.watchID, watchID)
        }
        buffer.writeBytes(logRecord)
        return buffer
    }
}
