import NIOCore
import SharedStateWire
import Synchronization

/// The server's open connections: admission against the connection limits, the list for
/// `syncctl clients`, and the shutdown that lets each connection finish its answered writes.
final class ConnectionRegistry: Sendable {
    private struct Connection {
        var record: ClientRecord
        /// Stops the connection reading and closes it once its writes are answered.
        var drain: @Sendable () -> Void
    }

    private struct State {
        var open: [UInt64: Connection] = [:]
        var isShuttingDown = false
        var emptied: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    private let lastSessionID = Atomic<UInt64>(0)

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

    /// Admits a connection, or says why not: too many clients, too many of this user's, or
    /// syncd shutting down.
    func admit(_ record: ClientRecord, limits: Limits, drain: @escaping @Sendable () -> Void) -> SharedStateError? {
        state.withLock { state in
            if state.isShuttingDown {
                return SharedStateError(.unavailable, "syncd is shutting down")
            }
            if state.open.count >= limits.maxConnections {
                return SharedStateError(.tooLarge, "syncd has \(limits.maxConnections) clients connected, its limit; try again later")
            }
            if let uid = record.credentials?.uid,
                state.open.values.count(where: { $0.record.credentials?.uid == uid }) >= limits.maxConnectionsPerUser
            {
                return SharedStateError(.tooLarge, "user \(uid) has \(limits.maxConnectionsPerUser) clients connected, the limit per user")
            }
            state.open[record.sessionID] = Connection(record: record, drain: drain)
            return nil
        }
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
