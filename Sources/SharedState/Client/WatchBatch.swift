/// What a watch delivers: every change of one revision together, or a snapshot.
public struct WatchBatch: Sendable, Hashable {
    /// What a batch carries. New kinds may be added; switch with a `default`.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: Hashable, Sendable { case snapshot, changes }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Every selected entry at ``WatchBatch/revision``, as puts: replaces what the watcher knew.
        public static let snapshot = Kind(.snapshot)
        /// The changes of one revision, which a watcher applies on top of what it knew.
        public static let changes = Kind(.changes)

        public var description: String { base == .snapshot ? "snapshot" : "changes" }
    }

    /// Whether this is a snapshot or the changes of one revision.
    public var kind: Kind
    /// The revision of the changes, or the revision the snapshot was taken at.
    public var revision: UInt64
    /// The changes: for a snapshot, one put per selected entry, in key order.
    public var changes: [Change]

    /// Creates a batch.
    public init(kind: Kind, revision: UInt64, changes: [Change]) {
        self.kind = kind
        self.revision = revision
        self.changes = changes
    }

    init(wireValue: Sharedstate_V1_WatchEvent) {
        self.init(
            kind: wireValue.kind == .snapshot ? .snapshot : .changes,
            revision: wireValue.revision,
            changes: wireValue.changes.map(Change.init(wireValue:))
        )
    }
}
