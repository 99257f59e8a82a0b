import Logging
import SharedStateWire
import Synchronization

/// The change log beyond the live state: a key's history, backups, compaction and retention.
extension StateEngine {
    /// The changes of `key` still in the change log, oldest first: the most recent `limit`, or
    /// all with nil; and the compacted revision.
    func history(of key: String, limit: Int?) async throws(SharedStateError) -> (changes: [LoggedChange], compactedRevision: UInt64) {
        let compacted = published.withLock { $0.compactedRevision }
        do {
            return (try await storage.history(of: key, limit: limit), compacted)
        } catch {
            throw SharedStateError(.unavailable, "cannot read the change log: \(error)")
        }
    }

    /// Writes a consistent copy of the database to `path`; returns the revision it holds.
    func backup(to path: String) async throws(SharedStateError) -> UInt64 {
        do {
            return try await storage.backup(to: path)
        } catch {
            throw SharedStateError(.unavailable, "cannot back up the database: \(error)")
        }
    }

    // MARK: Compaction

    /// Removes the change log up to and including `revision`; returns the compacted revision.
    ///
    /// - Throws: `invalidArgument` for a revision above the current one, `unavailable` when the
    ///   database fails.
    @discardableResult
    func compact(through revision: UInt64) async throws(SharedStateError) -> UInt64 {
        let current = published.withLock { ($0.revision, $0.compactedRevision) }
        if revision > current.0 {
            throw SharedStateError(.invalidArgument, "cannot compact through revision \(revision): the current revision is \(current.0)")
        }
        if revision <= current.1 { return current.1 }
        // Refuse new replays from the compacted range first; replays already reading check
        // that they got every revision.
        published.withLock { $0.compactedRevision = max($0.compactedRevision, revision) }
        do {
            try await storage.compact(through: revision)
        } catch {
            throw SharedStateError(.unavailable, "cannot compact the change log: \(error)")
        }
        logger.info("compacted the change log", metadata: ["revision": "\(revision)"])
        await forgetWriters(through: revision)
        return revision
    }

    /// Removes the `sessions` rows no revision left in the change log names: this run's sessions
    /// whose last write is compacted, and every earlier run's once compaction passes the
    /// revision syncd started at. A failure only leaves rows that take a little room.
    private func forgetWriters(through compacted: UInt64) async {
        let earlierRuns = compacted >= revisionAtStart ? lastSessionIDOfEarlierRuns : 0
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

    /// Applies the retention policy (see ``RetentionPolicy``): compacts what it no longer keeps.
    func applyRetention(now: ContinuousClock.Instant = .now) async {
        let (revision, compacted) = published.withLock { ($0.revision, $0.compactedRevision) }
        guard let target = retention.withLock({ $0.compactionTarget(revision: revision, compacted: compacted, now: now) }) else {
            return
        }
        do {
            try await compact(through: target)
        } catch {
            logger.error("automatic compaction failed", metadata: ["error": "\(error)"])
        }
    }
}
