/// Who made a write and why: recorded with the revision it gets (the session in the change log's
/// row, the rest of the writer once per session in the `sessions` table).
struct WriteOrigin: Sendable {
    /// The connection that wrote; nil for syncd itself (the ephemeral keys of a session that
    /// ended, or of a previous run).
    var writer: WriterIdentity?
    /// The cause the write carried; empty when it gave none.
    var cause: String

    /// syncd's own write, for `cause`.
    static func syncd(_ cause: String) -> WriteOrigin { WriteOrigin(writer: nil, cause: cause) }

    /// The session recorded with the revision: 0 for syncd itself.
    var session: UInt64 { writer?.session ?? 0 }
}

/// A connection that writes, as its Hello and the kernel described it.
final class WriterIdentity: Sendable {
    let session: UInt64
    let clientName: String
    let pid: Int32
    let uid: UInt32
    let gid: UInt32

    init(session: UInt64, clientName: String, pid: Int32, uid: UInt32, gid: UInt32) {
        self.session = session
        self.clientName = clientName
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }
}
