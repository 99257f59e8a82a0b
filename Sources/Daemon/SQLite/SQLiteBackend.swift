import Foundation
import Logging
import SharedStateWire
import SyncEngine
import Synchronization

/// The default backend: one SQLite database on this host, which syncd alone writes, so syncd
/// decides the revisions (a ``RevisionStore``; see ``StateBackend``).
///
/// The engine's writer plans each group of writes and hands its revisions to
/// ``persist(_:)``, which appends them to the change log's journal (see ``Storage``). The change
/// log answers replays, history and compaction; the journal is moved into the database, and the
/// `entries` table brought up to date, between commits (``performMaintenance(changedEntries:)``).
///
/// This file holds the backend's state and its reads of the change log; `+RevisionStore` the
/// commits.
package final class SQLiteBackend: StateBackend {
    let storage: Storage
    let logger: Logger
    /// The sessions this run has recorded in the `sessions` table (see ``WriteOrigin``), each
    /// with the last revision it wrote: once compaction passes it, the row goes.
    let recordedWriters = Mutex<[UInt64: UInt64]>([:])
    /// The revision and the highest session id the database held at start-up: every session of
    /// an earlier run wrote at or below that revision.
    private let start = Mutex<(revision: UInt64, lastSessionID: UInt64)>((0, 0))
    /// The maintenance failures, logged once per interval with a count.
    let maintenanceFailures = Mutex(RepeatedFailureLog())
    /// The journal's failed syncs, logged the same way.
    let syncFailures = Mutex(RepeatedFailureLog())
    /// The late syncs seen so far (see ``Storage/lateJournalSyncs``), and their log.
    let lateSyncsSeen = Mutex<(count: Int, log: RepeatedFailureLog)>((0, RepeatedFailureLog()))

    package var name: String { "sqlite" }

    package init(storage: Storage, logger: Logger) {
        self.storage = storage
        self.logger = logger
    }

    /// Reads the state the database holds; call it once, before the engine is made.
    package func load() throws -> StartingState {
        let loaded = try storage.load()
        start.withLock { $0 = (loaded.revision, loaded.lastSessionID) }
        if let recovery = storage.journalRecovery {
            var metadata: Logger.Metadata = [
                "journal": "\(recovery.journal)", "offset": "\(recovery.offset)", "bytes": "\(recovery.bytes)",
                "kept": "\(recovery.keptAt)",
            ]
            switch recovery.kind {
            case .cutTornEnd:
                // What a crash cut short was never acknowledged: its writer was told nothing.
                logger.warning("the segment journal ended in a torn record, which was cut off (the bytes are kept)", metadata: metadata)
            case .cutAfterPowerCut:
                if let lost = recovery.lostRevisions { metadata["revisions"] = "\(lost.lowerBound)-\(lost.upperBound)" }
                logger.warning(
                    """
                    the segment journal had a hole where the machine lost power: the writes after it, acknowledged less than a \
                    sync interval before the cut, were cut off with it (the bytes are kept)
                    """,
                    metadata: metadata)
            }
        }
        return loaded
    }

    package var writes: BackendWrites { .plannedHere(self) }

    package var status: BackendStatus {
        let unsynced = storage.journal.unsynced
        return BackendStatus(
            name: name, location: storage.path, databaseBytes: storage.databaseFileSize, writeAheadLogBytes: storage.writeAheadLogSize,
            durability: BackendStatus.Durability(
                mode: storage.durability.rawValue, syncInterval: storage.durability == .full ? .zero : storage.syncInterval,
                unsyncedAge: unsynced.map { $0.since.duration(to: .now) } ?? .zero, unsyncedBytes: unsynced?.bytes ?? 0,
                longestUnsyncedAge: storage.journal.longestUnsyncedAge, lateSyncs: storage.lateJournalSyncs,
                unmovedBytes: storage.unmovedBytes))
    }

    // MARK: The change log

    package func changes(after revision: UInt64, through: UInt64) async throws(SharedStateError) -> [CommittedRevision] {
        let logged: [CommittedRevision]
        do {
            logged = try await storage.changes(after: revision, through: through)
        } catch {
            throw SharedStateError(.unavailable, "cannot read the change log: \(error)")
        }
        // Compaction may have removed rows meanwhile: a replay must be whole.
        guard logged.count == Int(through - revision), logged.first?.revision == revision + 1 else {
            logger.notice(
                "a replay found the change log short",
                metadata: [
                    "after": "\(revision)", "through": "\(through)", "read": "\(logged.count)",
                    "first": "\(logged.first?.revision ?? 0)", "last": "\(logged.last?.revision ?? 0)",
                ]
            )
            throw SharedStateError(.compacted, "revision \(revision) was compacted while the watch started")
        }
        return logged
    }

    /// Read from the change log; `current` is not needed.
    package func entries(of keys: Set<String>, at revision: UInt64, current: [String: Entry?]) async throws(SharedStateError) -> [String:
        Entry?]
    {
        do {
            return try await storage.entries(of: keys, at: revision)
        } catch {
            throw SharedStateError(.unavailable, "cannot read the change log: \(error)")
        }
    }

    package func history(of key: String, limit: Int?) async throws(SharedStateError) -> [LoggedChange] {
        do {
            return try await storage.history(of: key, limit: limit)
        } catch {
            throw SharedStateError(.unavailable, "cannot read the change log: \(error)")
        }
    }

    package func backup(to path: String) async throws(SharedStateError) -> UInt64 {
        do {
            return try await storage.backup(to: path)
        } catch {
            throw SharedStateError(.unavailable, "cannot back up the database: \(error)")
        }
    }

    package func compact(through revision: UInt64) async throws(SharedStateError) {
        do {
            try await storage.compact(through: revision)
        } catch {
            throw SharedStateError(.unavailable, "cannot compact the change log: \(error)")
        }
        await forgetWriters(through: revision)
    }

    /// Removes the `sessions` rows no revision left in the change log names: this run's sessions
    /// whose last write is compacted, and every earlier run's once compaction passes the
    /// revision syncd started at. A failure only leaves rows that take a little room.
    private func forgetWriters(through compacted: UInt64) async {
        let start = start.withLock { $0 }
        let earlierRuns = compacted >= start.revision ? start.lastSessionID : 0
        do {
            try await BackgroundWork.run { [self] () throws(SharedStateError) in
                // Under the lock, so that a session writing again meanwhile is recorded anew.
                try recordedWriters.withLock { recorded throws(SharedStateError) in
                    let gone = recorded.lazy.filter { $0.value <= compacted }.map(\.key)
                    guard !gone.isEmpty || earlierRuns > 0 else { return }
                    do {
                        try storage.forgetSessions(Array(gone), throughSession: earlierRuns)
                    } catch {
                        throw SharedStateError(.unavailable, "\(error)")
                    }
                    for session in gone { recorded[session] = nil }
                }
            }
        } catch {
            logger.error("could not remove the writers of compacted revisions", metadata: ["error": "\(error)"])
        }
    }
}
