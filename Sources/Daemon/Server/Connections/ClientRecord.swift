import SharedStateWire
import Synchronization

/// What syncd knows about one connected client, for `syncctl clients`.
package final class ClientRecord: Sendable {
    let sessionID: UInt64
    let credentials: PeerCredentials?
    /// Who the connection acts for; nil when the kernel did not say (then nothing is allowed).
    let principal: Principal?
    let connectedAt = ContinuousClock.now
    let writer: ConnectionWriter
    private let name = Mutex("")
    private let place = Atomic<Int>(Sharedstate_V1_Admission.waitingForHello.rawValue)

    /// Which place among the connection limits it holds: waiting for its Hello until
    /// ``ConnectionRegistry/greet(_:limits:)`` lets it in as a client.
    var admission: Sharedstate_V1_Admission {
        get { Sharedstate_V1_Admission(rawValue: place.load(ordering: .relaxed)) ?? .waitingForHello }
        set { place.store(newValue.rawValue, ordering: .relaxed) }
    }

    /// Whether the client has completed the handshake.
    var hasGreeted: Bool { admission != .waitingForHello }

    init(sessionID: UInt64, credentials: PeerCredentials?, writer: ConnectionWriter) {
        self.sessionID = sessionID
        self.credentials = credentials
        self.principal = credentials.map(Principal.init(credentials:))
        self.writer = writer
    }

    /// Who the connection is, as a denial names it.
    var who: String { credentials.map { "user \($0.uid)" } ?? "this client" }

    /// The name the client gave in its Hello.
    var clientName: String {
        get { name.withLock { $0 } }
        set { name.withLock { $0 = newValue } }
    }
}
