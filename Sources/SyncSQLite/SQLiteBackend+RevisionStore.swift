import Foundation
import SharedStateWire
import SyncEngine

/// The writes: the engine plans each group and gives it its revisions; the backend appends them
/// to the change log's journal, one record per group (see ``RevisionStore`` and ``Storage``).
extension SQLiteBackend: RevisionStore {
    /// Commits `revisions` as one record of the journal, recording in the `sessions` table first
    /// each writer that had not written before in this run.
    package func persist(_ revisions: [CommittedRevision], segment: Data) throws {
        let newWriters = recordedWriters.withLock { recorded in
            var new: [WriterIdentity] = []
            var index = revisions.startIndex
            while index < revisions.endIndex {
                guard let writer = revisions[index].writer else {
                    index += 1
                    continue
                }
                // A writer's consecutive revisions, the usual group: one update, with the last.
                var last = index
                while last + 1 < revisions.endIndex, revisions[last + 1].writer === writer { last += 1 }
                if recorded.updateValue(revisions[last].revision, forKey: writer.session) == nil { new.append(writer) }
                index = last + 1
            }
            return new
        }
        do {
            try storage.commit(revisions, segment: segment, recording: newWriters)
        } catch {
            recordedWriters.withLock { recorded in for writer in newWriters { recorded[writer.session] = nil } }
            throw error
        }
    }

    /// With `--durability full` a commit waits for an fsync.
    package var commitsOnSubmittingThread: Bool { storage.durability != .full }

    /// When the `entries` table is next brought up to date (see ``Storage/materializationDeadline``).
    package var maintenanceDeadline: ContinuousClock.Instant? { storage.materializationDeadline }

    /// Moves the journal into the database and brings its `entries` table up to date with the
    /// committed state (see ``Storage/materialize(changedEntries:)``). A failure loses nothing:
    /// the journal has every change, the engine's table keeps its marks, and the writer tries
    /// again later.
    package func performMaintenance(changedEntries: () -> ChangedEntries) -> Bool {
        do {
            return try withoutActuallyEscaping(changedEntries) { try storage.materialize(changedEntries: $0) }
        } catch {
            logger.error(
                "could not write the current entries to the database; will retry",
                metadata: ["database": "\(storage.path)", "error": "\(error)"]
            )
            return false
        }
    }
}
