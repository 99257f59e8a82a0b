import Foundation
import Logging
import SharedStateWire
import Synchronization

/// The default backend: one SQLite database on this host, written by one writer that decides the
/// revisions (see ``StateBackend``).
///
/// Writes wait in a ``WriteQueue``; the writer takes everything queued, plans each request in
/// order against the engine's entries as the earlier ones left them (``StateEngine/plan(_:origins:)``),
/// commits the group in one SQLite transaction, and only then publishes it. The change log in the
/// database answers replays, history and compaction.
///
/// This file holds the backend's state and its reads of the change log; `+Writer` is the queue,
/// the commit and the publication.
final class SQLiteBackend: StateBackend {
    let storage: Storage
    let logger: Logger
    /// The most write requests one SQLite transaction takes.
    let maxRequestsPerCommit: Int
    let queue = WriteQueue()
    /// The sessions this run has recorded in the `sessions` table (see ``WriteOrigin``), each
    /// with the last revision it wrote: once compaction passes it, the row goes.
    let recordedWriters = Mutex<[UInt64: UInt64]>([:])
    /// The revision and the highest session id the database held at start-up: every session of
    /// an earlier run wrote at or below that revision.
    private let start = Mutex<(revision: UInt64, lastSessionID: UInt64)>((0, 0))

    var name: String { "sqlite" }

    init(storage: Storage, maxRequestsPerCommit: Int = 1024, logger: Logger) {
        self.storage = storage
        self.maxRequestsPerCommit = maxRequestsPerCommit
        self.logger = logger
    }

    /// Reads the state the database holds; call it once, before the engine is made.
    func load() throws -> StartingState {
        let loaded = try storage.load()
        start.withLock { $0 = (loaded.revision, loaded.lastSessionID) }
        return loaded
    }

    /// Deletes the ephemeral keys of sessions from before a restart: their owners are gone.
    ///
    /// Call it once, before ``run(publishingTo:)`` and before any client connects.
    func expireEphemeralKeysOfPreviousRun(in engine: StateEngine) throws(SharedStateError) {
        let keys = engine.published.withLock { state in
            state.ephemeralKeys.values.flatMap { $0 }
        }
        guard !keys.isEmpty else { return }
        // The writer is not running yet: commit this one request directly.
        _ = try commit(
            [.expireEphemeral(session: nil, keys: keys.sorted())], origins: [.syncd("the sessions of an earlier run ended")],
            to: engine
        )[0].get()
    }

    /// The engine's entry: this syncd's writer is the only one, and it publishes every write
    /// before answering it.
    func consistentEntry(_ key: String, in engine: StateEngine) async throws(SharedStateError) -> (entry: Entry?, revision: UInt64) {
        engine.entry(key)
    }

    /// Deletes the ephemeral keys still bound to a session that ended.
    ///
    /// The keys are looked up when the writer gets to this request, after every write the session
    /// queued before it ended, so an ephemeral put still in the queue is deleted too.
    func endSession(_ session: UInt64, in engine: StateEngine) {
        engine.submit(.expireEphemeral(session: session, keys: []), origin: .syncd("session \(session) ended")) { [logger] result in
            if case .failure(let error) = result {
                logger.error(
                    "could not delete a closed session's ephemeral keys", metadata: ["session": "\(session)", "error": "\(error)"])
            }
        }
    }

    var status: BackendStatus {
        BackendStatus(
            name: name, location: storage.path, databaseBytes: storage.databaseFileSize, writeAheadLogBytes: storage.writeAheadLogSize)
    }

    // MARK: The change log

    func changes(after revision: UInt64, through: UInt64) async throws(SharedStateError) -> [CommittedRevision] {
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

    func entries(of keys: Set<String>, at revision: UInt64) async throws(SharedStateError) -> [String: Entry?] {
        do {
            return try await storage.entries(of: keys, at: revision)
        } catch {
            throw SharedStateError(.unavailable, "cannot read the change log: \(error)")
        }
    }

    func history(of key: String, limit: Int?) async throws(SharedStateError) -> [LoggedChange] {
        do {
            return try await storage.history(of: key, limit: limit)
        } catch {
            throw SharedStateError(.unavailable, "cannot read the change log: \(error)")
        }
    }

    func backup(to path: String) async throws(SharedStateError) -> UInt64 {
        do {
            return try await storage.backup(to: path)
        } catch {
            throw SharedStateError(.unavailable, "cannot back up the database: \(error)")
        }
    }

    func compact(through revision: UInt64) async throws(SharedStateError) {
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
