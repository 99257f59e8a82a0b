/// Ephemeral keys: bound to the session that put them, deleted when it ends.
extension StateEngine {
    /// Deletes the ephemeral keys still bound to a session that ended (see
    /// ``StateBackend/endSession(_:in:)``).
    func endSession(_ session: UInt64) {
        backend.endSession(session, in: self)
    }
}
