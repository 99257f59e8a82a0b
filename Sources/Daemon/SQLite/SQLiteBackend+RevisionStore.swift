import Foundation
import SharedStateWire
import SyncEngine

/// The writes: the engine plans each group and gives it its revisions; the backend appends them
/// to the change log's journal, one record per group (see ``RevisionStore`` and ``Storage``).
extension SQLiteBackend: RevisionStore {
    /// A group's records as the journal keeps them: a ``LogSegment``.
    package var recordFraming: LogRecord.Framing { LogSegment.framing }

    /// Commits `revisions` as one record of the journal, recording in the `sessions` table first
    /// each writer that had not written before in this run.
    package func persist(_ revisions: [CommittedRevision], group: Data) throws {
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
            try storage.commit(revisions, segment: group, recording: newWriters)
        } catch {
            recordedWriters.withLock { recorded in for writer in newWriters { recorded[writer.session] = nil } }
            throw error
        }
        let late = storage.lateJournalSyncs
        if late != lateSyncsSeen.withLock({ $0.count }) { sayJournalSyncedLate(late) }
    }

    /// Logs, at most once per 10 s with a count, that appends synced the journal themselves: the
    /// writer's sync is late (a slow disk, a stuck or failing move), and each write waits for the
    /// disk until it catches up.
    private func sayJournalSyncedLate(_ late: Int) {
        let count = lateSyncsSeen.withLock { seen -> Int? in
            defer { seen.count = late }
            return seen.log.failed(at: .now, count: late - seen.count)
        }
        guard let count else { return }
        logger.warning(
            "the journal went unsynced longer than the sync interval: writes wait for the disk until it catches up",
            metadata: ["database": "\(storage.path)", "interval": "\(storage.syncInterval)", "late_syncs": "\(count)"]
        )
    }

    /// With `--durability full` a commit waits for an fsync.
    package var commitsOnSubmittingThread: Bool { storage.durability != .full }

    /// When the journal is next moved into the database (see ``Storage/materializationDeadline``).
    package var maintenanceDeadline: ContinuousClock.Instant? { storage.materializationDeadline }

    /// Half a sync interval after the journal's oldest unsynced record (see ``Storage/journalSyncDeadline``).
    package var syncDeadline: ContinuousClock.Instant? { storage.journalSyncDeadline }

    /// Syncs the journal (``SegmentJournal/sync()``), while commits go on; a failure is logged
    /// once per 10 s with a count, and the next append that finds the journal unsynced longer
    /// than the interval syncs it itself, or is refused.
    package func syncAppended() {
        do {
            try storage.journal.sync()
            if let failures = syncFailures.withLock({ $0.succeeded() }) {
                logger.notice("the journal syncs again", metadata: ["database": "\(storage.path)", "failures": "\(failures)"])
            }
        } catch {
            if let failures = syncFailures.withLock({ $0.failed(at: .now) }) {
                logger.error(
                    "could not sync the journal; will retry",
                    metadata: ["database": "\(storage.path)", "error": "\(error)", "failures": "\(failures)"])
            }
        }
    }

    /// Moves the journal into the database and brings its `entries` table up to date with the
    /// committed state (see ``Storage/maintain(changedEntries:)``).
    /// A failure loses nothing: the journal has every change, the engine's table keeps its marks,
    /// and the writer tries again later; it is logged once per 10 s with a count.
    package func performMaintenance(changedEntries: () -> ChangedEntries, beforeStopping: Bool) -> Bool {
        do {
            let wrote = try withoutActuallyEscaping(changedEntries) { try storage.maintain(changedEntries: $0, isDue: beforeStopping) }
            if let failures = maintenanceFailures.withLock({ $0.succeeded() }) {
                logger.notice(
                    "the journal is moved into the database again",
                    metadata: ["database": "\(storage.path)", "failures": "\(failures)"])
            }
            return wrote
        } catch {
            if let failures = maintenanceFailures.withLock({ $0.failed(at: .now) }) {
                logger.error(
                    "could not move the journal into the database; will retry",
                    metadata: ["database": "\(storage.path)", "error": "\(error)", "failures": "\(failures)"]
                )
            }
            return false
        }
    }
}
