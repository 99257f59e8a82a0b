import NIOCore
import SharedStateWire
import SyncEngine
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The server's open connections: admission against the connection limits, the list for
/// `syncctl clients`, and the shutdown that lets each connection finish its answered writes.
///
/// Admission has two steps, as sshd's and PostgreSQL's do. A new connection only takes one of
/// `maxUnauthenticatedConnections` places for connections that have not said Hello; when they are
/// all taken, it pushes the oldest one out. The limits on clients (in all, and per user) apply
/// when a connection sends its Hello, so connections that never do cannot lock anyone out; and
/// `reservedAdministratorConnections` more places are kept for syncd's own user and root.
package final class ConnectionRegistry: Sendable {
    private struct Connection {
        var record: ClientRecord
        /// Stops the connection reading and closes it once its writes are answered.
        var drain: @Sendable () -> Void
        /// Closes the connection at once, `error` its last frame.
        var evict: @Sendable (SharedStateError) -> Void
        var hasGreeted = false
    }

    private struct State {
        var open: [UInt64: Connection] = [:]
        var isShuttingDown = false
        var emptied: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    private let lastSessionID: Atomic<UInt64>
    /// The users who may take the places kept for administrators.
    private let administrators: Set<uid_t>

    /// A registry whose administrators are `administrators` (syncd's own user and root), and
    /// whose session ids follow `lastSessionID` (the highest an earlier run used).
    init(administrators: Set<uid_t> = [0, getuid()], lastSessionID: UInt64 = 0, metrics: DaemonMetrics? = nil) {
        self.administrators = administrators
        self.lastSessionID = Atomic(lastSessionID)
        self.metrics = metrics
    }

    private let metrics: DaemonMetrics?

    /// A session id never handed out before by this server.
    func nextSessionID() -> UInt64 {
        lastSessionID.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// The number of connected clients.
    var count: Int { state.withLock { $0.open.count } }

    /// Every connected client, in the order they connected.
    var records: [ClientRecord] {
        state.withLock { $0.open.values.map(\.record) }.sorted { $0.sessionID < $1.sessionID }
    }

    /// Admits a new connection among those that have not said Hello yet, pushing the oldest of
    /// them out when all their places are taken; or says why not (syncd shutting down).
    func admit(
        _ record: ClientRecord,
        limits: Limits,
        drain: @escaping @Sendable () -> Void,
        evict: @escaping @Sendable (SharedStateError) -> Void
    ) -> SharedStateError? {
        let outcome: (refusal: SharedStateError?, pushedOut: Connection?) = state.withLock { state in
            if state.isShuttingDown { return (SharedStateError(.unavailable, "syncd is shutting down"), nil) }
            var pushedOut: Connection?
            let waiting = state.open.values.filter { !$0.hasGreeted }
            if waiting.count >= limits.maxUnauthenticatedConnections,
                let oldest = waiting.min(by: { $0.record.sessionID < $1.record.sessionID })
            {
                pushedOut = state.open.removeValue(forKey: oldest.record.sessionID)
            }
            state.open[record.sessionID] = Connection(record: record, drain: drain, evict: evict)
            return (nil, pushedOut)
        }
        if let refusal = outcome.refusal {
            metrics?.connectionsRefused.increment()
            return refusal
        }
        metrics?.connectionsAccepted.increment()
        if outcome.pushedOut != nil { metrics?.connectionsRefused.increment() }
        outcome.pushedOut?.evict(
            SharedStateError(
                .limitReached,
                "\(limits.maxUnauthenticatedConnections) connections were waiting to say Hello, the limit; this was the oldest"
            )
        )
        return nil
    }

    /// Lets the connection `sessionID`, which has sent its Hello, count as a client, or says why
    /// not: too many clients, or too many of its user's.
    func greet(_ sessionID: UInt64, limits: Limits) -> SharedStateError? {
        let refusal = admitGreeting(sessionID, limits: limits)
        // Refused at Hello: a client over the limits (connections pushed out count at admission).
        if refusal != nil { metrics?.connectionsRefused.increment() }
        return refusal
    }

    private func admitGreeting(_ sessionID: UInt64, limits: Limits) -> SharedStateError? {
        state.withLock { state in
            guard let connection = state.open[sessionID] else {
                return SharedStateError(.unavailable, "the connection was closed")
            }
            let uid = connection.record.credentials?.uid
            let clients = state.open.values.filter(\.hasGreeted)
            let isAdministrator = uid.map { administrators.contains($0) } ?? false
            // The reserve holds for both limits: where the clients run as syncd's own user, its
            // per-user limit would otherwise keep the administrator out.
            let reserve = isAdministrator ? limits.reservedAdministratorConnections : 0
            let ofUser = uid.map { uid in clients.count(where: { $0.record.credentials?.uid == uid }) } ?? 0
            if clients.count >= limits.maxConnections + reserve {
                return SharedStateError(.limitReached, "syncd has \(limits.maxConnections) clients connected, its limit; try again later")
            }
            if let uid, ofUser >= limits.maxConnectionsPerUser + reserve {
                return SharedStateError(
                    .limitReached, "user \(uid) has \(limits.maxConnectionsPerUser) clients connected, the limit per user")
            }
            state.open[sessionID]?.hasGreeted = true
            // Set once, at Hello: a connection let in beyond the limits stays "reserved".
            let isBeyondTheLimits = clients.count >= limits.maxConnections || (uid != nil && ofUser >= limits.maxConnectionsPerUser)
            connection.record.admission = isBeyondTheLimits ? .reserved : .client
            return nil
        }
    }

    /// Closes the connection `sessionID` at once, `error` its last frame; nothing if it is gone.
    func evict(_ sessionID: UInt64, because error: SharedStateError) {
        state.withLock { $0.open[sessionID]?.evict }?(error)
    }

    /// Forgets a connection that closed.
    func remove(_ sessionID: UInt64) {
        let emptied: [CheckedContinuation<Void, Never>] = state.withLock { state in
            state.open[sessionID] = nil
            guard state.open.isEmpty else { return [] }
            defer { state.emptied = [] }
            return state.emptied
        }
        for continuation in emptied { continuation.resume() }
    }

    /// Refuses new connections, drains every open one, and returns once all have closed.
    func shutDown() async {
        let drains = state.withLock { state in
            state.isShuttingDown = true
            return state.open.values.map(\.drain)
        }
        for drain in drains { drain() }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isEmpty = state.withLock { state in
                if state.open.isEmpty { return true }
                state.emptied.append(continuation)
                return false
            }
            if isEmpty { continuation.resume() }
        }
    }
}
