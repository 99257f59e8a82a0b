import SharedStateWire

/// A key's change as the change log holds it, with who made it.
package struct LoggedChange: Sendable {
    package var change: Change
    /// The session that wrote it (0: syncd itself), and the cause its write carried.
    package var writerSession: UInt64
    package var cause: String
    /// The session's client, when the `sessions` table knows it (a revision written before
    /// writers were recorded has none).
    package var writer: WriterIdentity?

    package init(change: Change, writerSession: UInt64, cause: String, writer: WriterIdentity? = nil) {
        self.change = change
        self.writerSession = writerSession
        self.cause = cause
        self.writer = writer
    }

    /// The writer's client name as history shows it: "syncd" for syncd's own writes (session 0,
    /// always with a cause), nothing for a revision from before writers were recorded (session 0,
    /// no cause) or a session the table lacks.
    package var clientName: String {
        writerSession == 0 ? (cause.isEmpty ? "" : "syncd") : writer?.clientName ?? ""
    }
}
