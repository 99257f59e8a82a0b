import SharedStateWire

/// Every change one write request made, under the revision it was given, with its bytes encoded
/// once for the change log and for every watcher.
struct CommittedRevision: Sendable {
    /// The revision.
    let revision: UInt64
    /// The changes, in the order the request made them.
    let changes: [Change]
    /// The revision as the protocol encodes it (see ``EncodedRevision``).
    let encoded: EncodedRevision

    init(revision: UInt64, changes: [Change]) {
        self.revision = revision
        self.changes = changes
        self.encoded = EncodedRevision(revision: revision, changes: changes)
    }

    /// Decodes a row of the change log.
    init(logRecord: EncodedRevision.LogRecord) throws {
        let encoded = try EncodedRevision(logRecord: logRecord)
        self.revision = encoded.revision
        self.changes = encoded.wireChanges.map(Change.init(wireValue:))
        self.encoded = encoded
    }

    /// The change log's row for this revision.
    var logRecord: EncodedRevision.LogRecord { encoded.logRecord }
}
