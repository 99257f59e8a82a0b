/// Who made a write and why: recorded with the revision it gets (the session in the change log's
/// row, the rest of the writer once per session in the `sessions` table).
package struct WriteOrigin: Sendable {
    /// The connection that wrote; nil for syncd itself (the ephemeral keys of a session that
    /// ended, or of a previous run).
    package var writer: WriterIdentity?
    /// The cause the write carried; empty when it gave none.
    package var cause: String

    /// syncd's own write, for `cause`.
    package static func syncd(_ cause: String) -> WriteOrigin { WriteOrigin(writer: nil, cause: cause) }

    /// The session recorded with the revision: 0 for syncd itself.
    package var session: UInt64 { writer?.session ?? 0 }

    package init(writer: WriterIdentity?, cause: String) {
        self.writer = writer
        self.cause = cause
    }
}

/// A connection that writes, as its Hello and the kernel described it.
package final class WriterIdentity: Sendable {
    package let session: UInt64
    package let clientName: String
    package let pid: Int32
    package let uid: UInt32
    package let gid: UInt32

    package init(session: UInt64, clientName: String, pid: Int32, uid: UInt32, gid: UInt32) {
        self.session = session
        self.clientName = clientName
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }
}
