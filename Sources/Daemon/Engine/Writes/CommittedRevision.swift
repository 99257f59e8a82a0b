import Foundation
import SharedStateWire

/// Every change one write request made, under the revision it was given, with who made it and its
/// bytes encoded once for the change log and for every watcher.
package struct CommittedRevision: Sendable {
    /// The revision.
    package let revision: UInt64
    /// The changes, in the order the request made them.
    package let changes: RevisionChanges
    /// The writer, for a revision committed by this run (nil when read back from the log, or for
    /// syncd's own): recorded in the `sessions` table with its first revision.
    package let writer: WriterIdentity?
    /// The revision as the protocol encodes it (see ``EncodedRevision``).
    let encoded: EncodedRevision
    /// Each change's key's entry before it, at the same index as ``changes``: found when the
    /// revision is published or replayed to a watch that asks for previous values, nil otherwise.
    package internal(set) var previous: [Change.Previous]?

    package init(revision: UInt64, changes: [Change], origin: WriteOrigin = .syncd("")) {
        self.init(revision: revision, changes: RevisionChanges(changes), origin: origin)
    }

    /// A revision whose record is encoded on its own: a commit group of one.
    init(revision: UInt64, changes: RevisionChanges, origin: WriteOrigin) {
        self.revision = revision
        self.changes = changes
        self.writer = origin.writer
        self.encoded = EncodedRevision(revision: revision, changes: changes, writerSession: origin.session, cause: origin.cause)
    }

    /// A revision of a commit group whose records were encoded together: `logRecord` is its
    /// record's bytes within the group's (see ``LogRecordEncoding/group(of:framedAs:)``).
    init(revision: UInt64, changes: RevisionChanges, origin: WriteOrigin, logRecord: EncodedRevision.LogRecord) {
        self.revision = revision
        self.changes = changes
        self.writer = origin.writer
        self.encoded = EncodedRevision(revision: revision, writerSession: origin.session, cause: origin.cause, logRecord: logRecord)
    }

    /// Decodes a row of the change log.
    package init(logRecord: EncodedRevision.LogRecord) throws {
        let (encoded, changes) = try EncodedRevision.decode(logRecord)
        self.revision = encoded.revision
        self.changes = RevisionChanges(changes)
        self.writer = nil
        self.encoded = encoded
    }

    /// The session that wrote it (0: syncd itself), as its record holds it.
    package var writerSession: UInt64 { encoded.writerSession }
    /// The cause its write carried, as its record holds it.
    package var cause: String { encoded.cause }

    /// Finds each change's previous entry, from `before` (the entry of a key before this
    /// revision, nil if the key did not exist; not called for a key `latest` holds) and `latest`
    /// (the entries of earlier revisions of the same run, nil for a deletion), which it updates.
    mutating func findPrevious(in latest: inout [String: Entry?], before: (String) -> Change.Previous) {
        var previous: [Change.Previous] = []
        previous.reserveCapacity(changes.count)
        for change in changes {
            if let known = latest[change.key] {
                previous.append(known.map(Change.Previous.entry) ?? .absent)
            } else {
                previous.append(before(change.key))
            }
            latest[change.key] = .some(change.type == .put ? change.entry : nil)
        }
        self.previous = previous
    }

    /// The change log's row for this revision.
    package var logRecord: EncodedRevision.LogRecord { encoded.logRecord }
}

/// The changes one revision made, in order. Most revisions are a lone put: that one is kept as
/// its key and the entry the engine stores, so that planning, encoding and publishing it makes
/// no ``Change``, no `Entry` with a `Data` copy of the value and no one-element array (issue 38,
/// step 24). A ``Change`` is made only when one is read (a watch that asks for previous values
/// or for part of a revision, a restore's journal); the keys are read without one.
package struct RevisionChanges: Sendable, RandomAccessCollection, Equatable {
    private enum Storage: Sendable {
        case put(key: String, entry: StoredEntry)
        case list([Change])
    }

    private let storage: Storage

    /// The changes `changes`, in order.
    package init(_ changes: [Change]) {
        storage = .list(changes)
    }

    /// The put that left `entry` as `key`'s entry (`key` being the entry's own).
    init(put key: String, entry: StoredEntry) {
        storage = .put(key: key, entry: entry)
    }

    package var startIndex: Int { 0 }

    package var endIndex: Int {
        switch storage {
        case .put: 1
        case .list(let changes): changes.count
        }
    }

    /// The change at `index`, made anew for a lone put: read ``key(at:)`` where the key will do.
    package subscript(index: Int) -> Change {
        switch storage {
        case .put(let key, let entry):
            precondition(index == 0, "index out of range")
            return .put(entry.entry(key: key))
        case .list(let changes):
            return changes[index]
        }
    }

    /// The key of the change at `index`.
    package func key(at index: Int) -> String {
        switch storage {
        case .put(let key, _):
            precondition(index == 0, "index out of range")
            return key
        case .list(let changes):
            return changes[index].key
        }
    }

    /// The lone put's key and stored entry, for a revision that is one.
    var lonePut: (key: String, entry: StoredEntry)? {
        if case .put(let key, let entry) = storage { return (key, entry) }
        return nil
    }

    /// The changes when the revision is not a lone put, read in place.
    var list: [Change]? {
        if case .list(let changes) = storage { return changes }
        return nil
    }

    package static func == (lhs: RevisionChanges, rhs: RevisionChanges) -> Bool {
        lhs.elementsEqual(rhs)
    }
}

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

    /// A revision whose record is already encoded (see ``LogRecordEncoding/group(of:framedAs:)``).
    init(revision: UInt64, writerSession: UInt64, cause: String, logRecord: LogRecord) {
        self.revision = revision
        self.writerSession = writerSession
        self.cause = cause
        self.logRecord = logRecord
    }
}

/// The change log's record of each revision the engine commits, and a commit group's records in
/// one buffer framed as its store asks: what each revision holds, read in place (a lone put's
/// entry from its cell, no `Change` made), handed to ``LogRecord``, which lays the bytes out in
/// `SharedStateWire` beside the other hand codecs (D13, D14). `LogRecordEncodingTests` checks the bytes against
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
    /// framed as its store keeps it (``RevisionStore/recordFraming``, laid out by
    /// ``LogRecord/framed(count:size:write:as:)``), and each record's range in it.
    ///
    /// The revisions are read in place, by index: one copied out would retain its changes and
    /// origin, and each change its key and value.
    static func group(of revisions: [Revision], framedAs framing: LogRecord.Framing) -> (body: Data, records: [Range<Int>]) {
        LogRecord.framed(
            count: revisions.count,
            size: { index in size(header(of: revisions[index]), revisions[index].changes) },
            write: { index, writer in write(header(of: revisions[index]), revisions[index].changes, to: &writer) },
            as: framing
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

/// Who made a write and why: recorded with the revision it gets (the session in the change log's
/// row, the rest of the writer once per session in the `sessions` table).
package struct WriteOrigin: Sendable {
    /// The connection that wrote; nil for syncd itself (the ephemeral keys of a session that
    /// ended, or of a previous run).
    package var writer: WriterIdentity?
    /// The cause the write carried; empty when it gave none.
    package var cause: String

    /// syncd's own write, for `cause`.
    package static func syncd(_ cause: String) -> WriteOrigin { WriteOrigin(writer: nil, cause: cause) }

    /// The session recorded with the revision: 0 for syncd itself.
    package var session: UInt64 { writer?.session ?? 0 }

    package init(writer: WriterIdentity?, cause: String) {
        self.writer = writer
        self.cause = cause
    }
}

/// A connection that writes, as its Hello and the kernel described it.
package final class WriterIdentity: Sendable {
    package let session: UInt64
    package let clientName: String
    package let pid: Int32
    package let uid: UInt32
    package let gid: UInt32

    package init(session: UInt64, clientName: String, pid: Int32, uid: UInt32, gid: UInt32) {
        self.session = session
        self.clientName = clientName
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }
}
