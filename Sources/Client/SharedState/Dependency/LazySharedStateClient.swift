import Foundation
import SyncClient
import Synchronization

/// A ``SharedStateClient`` that connects on first use, so the dependency's live value can be made
/// without waiting. A failed connection is retried by the next call.
final class LazySharedStateClient: SharedStateBackend {
    private enum Connection {
        case none
        case connecting(Task<SharedStateClient, Error>)
        case connected(SharedStateClient)
    }

    private let configuration: SharedStateClient.Configuration
    private let connection = Mutex<Connection>(.none)

    init(configuration: SharedStateClient.Configuration) {
        self.configuration = configuration
    }

    /// The client once it has connected; until then, nil.
    private var connectedClient: SharedStateClient? {
        connection.withLock { if case .connected(let client) = $0 { client } else { nil } }
    }

    private nonisolated(nonsending) func client() async throws(SharedStateError) -> SharedStateClient {
        let task = connection.withLock { connection -> Task<SharedStateClient, Error>? in
            switch connection {
            case .connected: return nil
            case .connecting(let task): return task
            case .none:
                // One attempt shared by every caller that arrives while it runs; it is awaited by
                // each of them and ends with the connection, so it needs no other owner.
                let configuration = configuration
                let task = Task { () async throws -> SharedStateClient in
                    try await SharedStateClient.connect(configuration)
                }
                connection = .connecting(task)
                return task
            }
        }
        guard let task else { return connectedClient! }
        do {
            let client = try await task.value
            connection.withLock { if case .connecting = $0 { $0 = .connected(client) } }
            return client
        } catch {
            connection.withLock { if case .connecting(let failed) = $0, failed == task { $0 = .none } }
            throw (error as? SharedStateError) ?? SharedStateError(.unavailable, "cannot connect to syncd: \(error)")
        }
    }

    nonisolated(nonsending) func get(_ key: String) async throws(SharedStateError) -> Entry {
        try await client().get(key)
    }

    nonisolated(nonsending) func put(_ key: String, value: Data, ifVersion: UInt64?, ephemeral: Bool) async throws(SharedStateError)
        -> PutResult
    {
        try await client().put(key, value: value, ifVersion: ifVersion, ephemeral: ephemeral)
    }

    nonisolated(nonsending) func delete(_ key: String, ifVersion: UInt64?) async throws(SharedStateError) -> UInt64 {
        try await client().delete(key, ifVersion: ifVersion)
    }

    nonisolated(nonsending) func list(prefix: String, limit: Int?) async throws(SharedStateError) -> ListResult {
        try await client().list(prefix: prefix, limit: limit)
    }

    nonisolated(nonsending) func count(prefix: String) async throws(SharedStateError) -> CountResult {
        try await client().count(prefix: prefix)
    }

    nonisolated(nonsending) func perform<Read: SharedStateRead>(_ read: Read) async throws(SharedStateError) -> Read.Result {
        try await client().perform(read)
    }

    nonisolated(nonsending) func transaction(_ transaction: Transaction) async throws(SharedStateError) -> TransactionResult {
        try await client().transaction(transaction)
    }

    func watch(prefixes: [String], fromRevision: UInt64?) -> WatchStream {
        if let client = connectedClient {
            return client.watch(prefixes: prefixes, fromRevision: fromRevision)
        }
        // Connecting is asynchronous and this is not: until the first connection, a task connects,
        // then relays the client's watch into a buffer of its own, which folds like any other when
        // the consumer is slow. The buffer's end cancels it.
        let buffer = WatchBuffer()
        let task = Task {
            do {
                for try await batch in try await client().watch(prefixes: prefixes, fromRevision: fromRevision) {
                    buffer.yield(batch)
                }
                buffer.finish()
            } catch {
                buffer.finish(throwing: error)
            }
        }
        buffer.onTermination { task.cancel() }
        return WatchStream(buffer: buffer)
    }

    func connectionStates() -> AsyncStream<ConnectionState> {
        if let client = connectedClient { return client.connectionStates() }
        let (stream, continuation) = AsyncStream.makeStream(of: ConnectionState.self)
        // As in `watch`: connects first, then relays; the stream's end cancels it.
        let task = Task {
            guard let client = try? await client() else {
                continuation.yield(.reconnecting)
                continuation.finish()
                return
            }
            for await state in client.connectionStates() { continuation.yield(state) }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
