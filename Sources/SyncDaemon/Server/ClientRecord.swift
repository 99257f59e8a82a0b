import Synchronization

/// What syncd knows about one connected client, for `syncctl clients`.
final class ClientRecord: Sendable {
    let sessionID: UInt64
    let credentials: PeerCredentials?
    /// Who the connection acts for; nil when the kernel did not say (then nothing is allowed).
    let principal: Principal?
    let connectedAt = ContinuousClock.now
    let writer: ConnectionWriter
    private let name = Mutex("")
    private let greeted = Atomic<Bool>(false)

    /// Whether the client has completed the handshake.
    var hasGreeted: Bool {
        get { greeted.load(ordering: .relaxed) }
        set { greeted.store(newValue, ordering: .relaxed) }
    }

    init(sessionID: UInt64, credentials: PeerCredentials?, writer: ConnectionWriter) {
        self.sessionID = sessionID
        self.credentials = credentials
        self.principal = credentials.map(Principal.init(credentials:))
        self.writer = writer
    }

    /// The name the client gave in its Hello.
    var clientName: String {
        get { name.withLock { $0 } }
        set { name.withLock { $0 = newValue } }
    }
}
