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

    /// The writer's client name as history shows it: "syncd" for syncd's own writes (session 0,
    /// always with a cause), nothing for a revision from before writers were recorded (session 0,
    /// no cause) or a session the table lacks.
    var clientName: String {
        writerSession == 0 ? (cause.isEmpty ? "" : "syncd") : writer?.clientName ?? ""
    }
}
