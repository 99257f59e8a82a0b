/// Ephemeral keys: bound to the session that put them, deleted when it ends.
package extension StateEngine {
    /// The ephemeral keys bound to `session`, in byte order: the first `limit`, and how many
    /// there are.
    func ephemeralKeys(of session: UInt64, limit: Int) -> (keys: [String], count: Int) {
        let keys = published.withLock { $0.ephemeralKeys[session] ?? [] }
        let sorted = keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        return (Array(sorted.prefix(limit)), keys.count)
    }

    /// Deletes the ephemeral keys still bound to a session that ended.
    ///
    /// After every write the session made before it ended, so an ephemeral put still waiting is
    /// deleted too: for a ``RevisionStore``, the writer looks the keys up when it gets to this
    /// request; a ``WriteForwarder`` ends the session after its writes.
    func endSession(_ session: UInt64) {
        switch self.writes {
        case .plannedHere:
            submit(.expireEphemeral(session: session, keys: []), origin: .syncd("session \(session) ended")) { [logger] result in
                if case .failure(let error) = result {
                    logger.error(
                        "could not delete a closed session's ephemeral keys", metadata: ["session": "\(session)", "error": "\(error)"])
                }
            }
        case .forwarded(let forwarder):
            forwarder.endSession(session)
        }
    }
}
