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
        /// The watcher skipped ahead to ``WatchBatch/revision`` (it fell behind, or resumed from a
        /// compacted revision). From syncd it is every selected entry, like a snapshot; a
        /// ``WatchStream`` turns it into the difference from what its consumer had seen: puts for
        /// keys that changed, deletes for keys that are gone, nothing for keys that did not change.
        public static let resync = Kind(.resync)

        /// Whether the batch replaces what the consumer of a ``WatchStream`` knew: a snapshot. (A
        /// resync there is a difference, applied like changes.)
        public var replacesState: Bool { base == .snapshot }

        /// The kind's name: `snapshot`, `changes`, `progress` or `resync`.
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
    /// For the changes of one revision from syncd: the session that wrote it (0: syncd itself;
    /// ``SharedStateClient/history(of:limit:)`` names its client), and the cause its write carried.
    public var writerSession: UInt64 = 0
    /// For the changes of one revision from syncd: the cause its write carried (empty: none).
    public var cause: String = ""

    /// Creates a batch.
    public init(kind: Kind, revision: UInt64, changes: [Change]) {
        self.kind = kind
        self.revision = revision
        self.changes = changes
    }

    init(wireValue: Sharedstate_V1_WatchEvent, previousValues: Bool) {
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
            // Only the changes of a revision carry previous entries.
            changes: wireValue.changes.map { Change(wireValue: $0, previousValues: previousValues && kind == .changes) }
        )
        self.writerSession = wireValue.writerSession
        self.cause = wireValue.cause
    }

    /// The batch a watch sees of an event read by hand (``WatchEventFrame``): with each change's
    /// previous entry only when it asked for them, and only in the changes of a revision.
    /// Consuming, so the changes are edited in place rather than copied, once per event.
    init(_ event: consuming WatchEventFrame, previousValues: Bool) {
        let kind: Kind =
            switch event.kind {
            case .changes: .changes
            case .snapshot: .snapshot
            case .progress: .progress
            case .resync: .resync
            }
        if !previousValues || kind != .changes {
            for index in event.changes.indices { event.changes[index].previous = .unknown }
        }
        self.init(kind: kind, revision: event.revision, changes: event.changes)
        self.writerSession = event.writerSession
        self.cause = event.cause
    }
}
