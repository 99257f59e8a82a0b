import SyncClient
import Synchronization

/// The client behind each writer session the inspector shows: from `clients` while it is
/// connected, else from the history of a key it wrote, which syncd keeps with the change log.
final class InspectorWriters: Sendable {
    /// A writer as the page names it.
    struct Name: Sendable, Hashable {
        var sessionID: UInt64
        var name: String
        /// 0 when syncd does not tell this user (see `Writer.pid`).
        var pid: Int32
    }

    private let client: SharedStateClient
    private let known = Mutex<[UInt64: Name]>([:])

    init(client: SharedStateClient) {
        self.client = client
    }

    /// Notes the connected clients' names.
    func note(_ clients: [ClientInfo]) {
        known.withLock { known in
            for client in clients { known[client.sessionID] = Name(sessionID: client.sessionID, name: client.name, pid: client.pid) }
        }
    }

    /// The writer of `revision`, which wrote `key` in session `session`.
    func name(of session: UInt64, revision: UInt64, key: String?) async -> Name {
        if session == 0 { return Name(sessionID: 0, name: "syncd", pid: 0) }
        if let name = known.withLock({ $0[session] }) { return name }
        if let clients = try? await client.clients() {
            note(clients)
            if let name = known.withLock({ $0[session] }) { return name }
        }
        if let key, let history = try? await client.history(of: key, limit: 100) {
            for (change, origin) in zip(history.changes, history.origins) where change.revision == revision {
                let name = Name(sessionID: session, name: origin.writer.clientName, pid: origin.writer.pid)
                known.withLock { $0[session] = name }
                return name
            }
        }
        return Name(sessionID: session, name: "session \(session)", pid: 0)
    }
}
