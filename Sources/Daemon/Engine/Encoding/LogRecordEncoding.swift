import Foundation
import SharedStateWire

/// The change log's record of each revision the engine commits, and a commit group's records as
/// one segment: what each revision holds, read in place (a lone put's entry from its cell, no
/// `Change` made), handed to ``LogRecord``, which lays the bytes out in `SharedStateWire` beside
/// the other hand codecs (D13, D14). `LogRecordEncodingTests` checks the bytes against
/// SwiftProtobuf's for all kinds of changes.
package enum LogRecordEncoding {
    /// The record of `changes` at `revision`, written by `writerSession` for `cause`.
    static func record(revision: UInt64, changes: RevisionChanges, writerSession: UInt64, cause: String) -> Data {
        let header = LogRecord.Header(revision: revision, writerSession: writerSession, cause: cause)
        return LogRecord.encode(size: size(header, changes)) { write(header, changes, to: &$0) }
    }

    /// A revision to encode with others of its commit group.
    struct Revision {
        var revision: UInt64
        var changes: RevisionChanges
        var origin: WriteOrigin
    }

    /// The records of a commit group's consecutive revisions, in one allocation: the group's body
    /// in the change log's segment format (``LogRecord/segment(count:size:write:)``), and each
    /// record's range in it.
    ///
    /// The revisions are read in place, by index: one copied out would retain its changes and
    /// origin, and each change its key and value.
    static func segment(of revisions: [Revision]) -> (body: Data, records: [Range<Int>]) {
        LogRecord.segment(
            count: revisions.count,
            size: { index in size(header(of: revisions[index]), revisions[index].changes) },
            write: { index, writer in write(header(of: revisions[index]), revisions[index].changes, to: &writer) }
        )
    }

    private static func header(of revision: Revision) -> LogRecord.Header {
        LogRecord.Header(revision: revision.revision, writerSession: revision.origin.session, cause: revision.origin.cause)
    }

    private static func size(_ header: LogRecord.Header, _ changes: RevisionChanges) -> Int {
        if let put = changes.lonePut {
            let numbers = LogRecord.Numbers(put.entry.numbers)
            return put.entry.withKeyAndValueBytes { key, value in
                LogRecord.lonePutSize(header, keyBytes: key.count, valueBytes: value.count, numbers)
            }
        }
        return LogRecord.changesSize(header, changes.list ?? [])
    }

    private static func write(_ header: LogRecord.Header, _ changes: RevisionChanges, to writer: inout ProtobufFieldWriter) {
        if let put = changes.lonePut {
            // Read from the entry as stored: its numbers decoded once, its bytes in place.
            let numbers = LogRecord.Numbers(put.entry.numbers)
            put.entry.withKeyAndValueBytes { key, value in
                LogRecord.writeLonePut(header, key: key, value: UnsafeRawBufferPointer(value), numbers, to: &writer)
            }
        } else {
            LogRecord.writeChanges(header, changes.list ?? [], to: &writer)
        }
    }
}

extension LogRecord.Numbers {
    init(_ numbers: StoredEntry.Numbers) {
        self.init(
            version: numbers.version, createRevision: numbers.createRevision, modRevision: numbers.modRevision,
            ephemeralSession: numbers.ephemeralSession)
    }
}
