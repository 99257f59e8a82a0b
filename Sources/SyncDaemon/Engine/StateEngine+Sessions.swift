import SharedStateWire
import Synchronization

/// Ephemeral keys: bound to the session that put them, deleted when it ends, or at start for the
/// sessions of a previous run.
extension StateEngine {
    /// Deletes the ephemeral keys still bound to a session that ended.
    ///
    /// The keys are looked up when the writer gets to this request, after every write the session
    /// queued before it ended, so an ephemeral put still in the queue is deleted too.
    func endSession(_ session: UInt64) {
        submit(.expireEphemeral(session: session, keys: []), origin: .syncd("session \(session) ended")) { [logger] result in
            if case .failure(let error) = result {
                logger.error(
                    "could not delete a closed session's ephemeral keys", metadata: ["session": "\(session)", "error": "\(error)"])
            }
        }
    }

    /// Deletes the ephemeral keys of sessions from before a restart: their owners are gone.
    ///
    /// Call it once, before ``runWriter()`` and before any client connects.
    func expireEphemeralKeysOfPreviousRun() throws(SharedStateError) {
        let keys = published.withLock { state in
            state.ephemeralKeys.values.flatMap { $0 }
        }
        guard !keys.isEmpty else { return }
        // The writer is not running yet: commit this one request directly.
        _ = try commit([.expireEphemeral(session: nil, keys: keys.sorted())], origins: [.syncd("the sessions of an earlier run ended")])[0]
            .get()
    }
}
