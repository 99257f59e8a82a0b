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
        if storage.lateJournalSyncs != lateSyncsLogged.withLock({ $0.count }) { sayJournalSyncedLate() }
    }

    /// Logs, at most once per ``failureLogInterval``, that appends synced the journal
    /// themselves: the writer's sync is late (a slow disk, a stuck or failing move), and each
    /// write now waits for the disk until it catches up.
    private func sayJournalSyncedLate() {
        lateSyncsLogged.withLock { logged in
            let now = ContinuousClock.now
            let late = storage.lateJournalSyncs
            guard logged.at.map({ $0.duration(to: now) >= Self.failureLogInterval }) ?? true else { return }
            logger.warning(
                "the journal went unsynced longer than the sync interval: writes wait for the disk until it catches up",
                metadata: [
                    "database": "\(storage.path)", "interval": "\(storage.syncInterval)", "late_syncs": "\(late - logged.count)",
                ]
            )
            logged = (late, now)
        }
    }

    /// With `--durability full` a commit waits for an fsync.
    package var commitsOnSubmittingThread: Bool { storage.durability != .full }

    /// When the journal is next synced or moved into the database (see ``Storage/maintenanceDeadline``).
    package var maintenanceDeadline: ContinuousClock.Instant? { storage.maintenanceDeadline }

    /// Syncs the journal, or moves it into the database and brings its `entries` table up to
    /// date with the committed state, whichever is due (see ``Storage/maintain(changedEntries:)``).
    /// A failure loses nothing: the journal has every change, the engine's table keeps its marks,
    /// and the writer tries again later; it is logged once per ``failureLogInterval`` with a count.
    package func performMaintenance(changedEntries: () -> ChangedEntries) -> Bool {
        do {
            let wrote = try withoutActuallyEscaping(changedEntries) { try storage.maintain(changedEntries: $0) }
            maintenanceFailures.withLock { failures in
                if failures.count > 0 {
                    logger.notice(
                        "the database takes the journal again",
                        metadata: ["database": "\(storage.path)", "failures": "\(failures.count)"])
                }
                failures = MaintenanceFailures()
            }
            return wrote
        } catch {
            maintenanceFailures.withLock { failures in
                failures.count += 1
                let now = ContinuousClock.now
                guard failures.lastLogged.map({ $0.duration(to: now) >= Self.failureLogInterval }) ?? true else { return }
                logger.error(
                    "could not move the journal into the database or sync it; will retry",
                    metadata: ["database": "\(storage.path)", "error": "\(error)", "failures": "\(failures.count)"]
                )
                failures.lastLogged = now
            }
            return false
        }
    }

    /// How often a failing maintenance is logged.
    static var failureLogInterval: Duration { .seconds(10) }
}
