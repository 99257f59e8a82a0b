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
    /// record's bytes within the group's (see ``LogRecordEncoding/segment(of:)``).
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
