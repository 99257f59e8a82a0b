import SharedStateWire

/// A key's change as the change log holds it, with who made it.
struct LoggedChange: Sendable {
    var change: Change
    /// The session that wrote it (0: syncd itself), and the cause its write carried.
    var writerSession: UInt64
    var cause: String
    /// The session's client, when the `sessions` table knows it (a revision written before
    /// writers were recorded has none).
    var writer: WriterIdentity?
}
