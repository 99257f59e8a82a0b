import Logging
import SharedStateWire
import Synchronization

/// The change log beyond the live state: a key's history, backups, compaction and retention.
package extension StateEngine {
    /// The changes of `key` still in the change log, oldest first: the most recent `limit`, or
    /// all with nil; and the compacted revision.
    func history(of key: String, limit: Int?) async throws(SharedStateError) -> (changes: [LoggedChange], compactedRevision: UInt64) {
        let compacted = published.withLock { $0.compactedRevision }
        return (try await backend.history(of: key, limit: limit), compacted)
    }

    /// Writes a consistent copy of the database to `path`; returns the revision it holds.
    func backup(to path: String) async throws(SharedStateError) -> UInt64 {
        try await backend.backup(to: path)
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
        try await backend.compact(through: revision)
        logger.info("compacted the change log", metadata: ["revision": "\(revision)"])
        return revision
    }

    /// Applies the retention policy (see ``RetentionPolicy``): compacts what it no longer keeps.
    func applyRetention(now: ContinuousClock.Instant = .now) async {
        let (revision, compacted) = published.withLock { ($0.revision, $0.compactedRevision) }
        guard let target = retention.withLock({ $0.compactionTarget(revision: revision, compacted: compacted, now: now) }) else {
            return
        }
        do {
            try await compact(through: target)
        } catch  where Task.isCancelled {
            // Shutting down: the next start compacts what this one did not.
            logger.debug("automatic compaction stopped by the shutdown", metadata: ["error": "\(error)"])
        } catch {
            logger.error("automatic compaction failed", metadata: ["error": "\(error)"])
        }
    }
}
