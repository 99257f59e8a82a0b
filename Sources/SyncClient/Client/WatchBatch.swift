/// What a watch delivers: every change of one revision together, or a snapshot.
public struct WatchBatch: Sendable, Hashable {
    /// What a batch carries. New kinds may be added; switch with a `default`.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: Hashable, Sendable { case snapshot, changes, progress, resync }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Every selected entry at ``WatchBatch/revision``, as puts: replaces what the watcher knew.
        public static let snapshot = Kind(.snapshot)
        /// The changes of one revision, which a watcher applies on top of what it knew.
        public static let changes = Kind(.changes)
        /// No changes: the watch is current with ``WatchBatch/revision``.
        public static let progress = Kind(.progress)
        /// Like ``snapshot``: the watcher fell too far behind, so syncd skipped ahead and sends every
        /// selected entry at ``WatchBatch/revision``. Keys missing from it were deleted meanwhile.
        public static let resync = Kind(.resync)

        /// Whether the batch replaces what the watcher knew (a snapshot or a resync).
        public var replacesState: Bool { base == .snapshot || base == .resync }

        public var description: String {
            switch base {
            case .snapshot: "snapshot"
            case .changes: "changes"
            case .progress: "progress"
            case .resync: "resync"
            }
        }
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
        let kind: Kind =
            switch wireValue.kind {
            case .snapshot: .snapshot
            case .progress: .progress
            case .resync: .resync
            default: .changes
            }
        self.init(
            kind: kind,
            revision: wireValue.revision,
            changes: wireValue.changes.map(Change.init(wireValue:))
        )
    }
}
