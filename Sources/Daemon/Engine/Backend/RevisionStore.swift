import Foundation
import SharedStateWire

/// The write half of a backend whose revisions this syncd decides, as the store's only writer
/// (``SQLiteBackend``): the engine plans each group of writes against its own entries and gives
/// it the next revisions; the store makes them durable; only then does the engine publish them
/// and answer the writes.
package protocol RevisionStore: AnyObject, Sendable {
    /// Makes `revisions` durable, all of them or none, before it returns. `group` holds their
    /// records, encoded once and framed as ``recordFraming`` says (a group of one: its record).
    ///
    /// Called by one thread at a time (the engine's writer, or a connection that took its turn),
    /// and never while ``performMaintenance(changedEntries:)`` runs.
    ///
    /// - Throws: Any error of the store: nothing was committed, and the writes are refused.
    func persist(_ revisions: [CommittedRevision], group: Data) throws

    /// How the store keeps a commit group's records together (SQLite: a `LogSegment`, the
    /// journal's record and the change log's row): the engine encodes a group's records into
    /// one buffer framed so, which watchers' frames share and ``persist(_:group:)`` is given.
    var recordFraming: LogRecord.Framing { get }

    /// Whether a commit is quick enough to run on the submitting connection's event loop when
    /// nothing else is waiting; false when each one waits for the disk (an fsync).
    var commitsOnSubmittingThread: Bool { get }

    /// When the store next wants ``performMaintenance(changedEntries:)``; nil while it wants none.
    var maintenanceDeadline: ContinuousClock.Instant? { get }

    /// When the store next wants ``syncAppended()``; nil while everything committed is synced.
    var syncDeadline: ContinuousClock.Instant? { get }

    /// Makes what was committed and not yet synced durable (SQLite: syncs the journal). Needs no
    /// turn to commit: the writer calls it while a commit may run on another thread. A failure
    /// loses nothing and is the store's to report; the next commit or sync tries again.
    func syncAppended()

    /// Work the store does between commits (SQLite: the journal moved into the database, and the
    /// current entries written to their table). Called when the writer is idle or
    /// ``maintenanceDeadline`` has passed, and before it stops.
    ///
    /// - Parameters:
    ///   - changedEntries: The entries the engine's table changed since the engine last forgot
    ///     them (``EntryTable/changes``), for a store that writes them out; ask only when writing.
    ///   - beforeStopping: Whether the writer stops next: the work is due now, whatever its
    ///     deadline.
    /// - Returns: Whether the store wrote what `changedEntries` gave: the engine then forgets them.
    func performMaintenance(changedEntries: () -> ChangedEntries, beforeStopping: Bool) -> Bool
}
