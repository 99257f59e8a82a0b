import Foundation
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
        let contents = try SharedStateWire.LogRecord.decode(logRecord)
        let encoded = EncodedRevision(
            revision: contents.revision, writerSession: contents.writerSession, cause: contents.cause, logRecord: logRecord)
        return (encoded, contents.changes)
    }

    /// A revision whose record is already encoded (see ``LogRecordEncoding/segment(of:)``).
    init(revision: UInt64, writerSession: UInt64, cause: String, logRecord: LogRecord) {
        self.revision = revision
        self.writerSession = writerSession
        self.cause = cause
        self.logRecord = logRecord
    }
}
