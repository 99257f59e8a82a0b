import Foundation
import SyncClient
import Synchronization

/// A ``SharedStateClient`` that connects on first use, so the dependency's live value can be made
/// without waiting. A failed connection is retried by the next call.
final class LazySharedStateClient: SharedStateBackend {
    private let configuration: SharedStateClient.Configuration
    private let connecting = Mutex<Task<SharedStateClient, Error>?>(nil)

    init(configuration: SharedStateClient.Configuration) {
        self.configuration = configuration
    }

    private func client() async throws(SharedStateError) -> SharedStateClient {
        let task = connecting.withLock { task in
            if let task { return task }
            let configuration = configuration
            let started = Task { () async throws -> SharedStateClient in
                try await SharedStateClient.connect(configuration)
            }
            task = started
            return started
        }
        do {
            return try await task.value
        } catch {
            connecting.withLock { if $0 == task { $0 = nil } }
            throw (error as? SharedStateError) ?? SharedStateError(.unavailable, "cannot connect to syncd: \(error)")
        }
    }

    func get(_ key: String) async throws(SharedStateError) -> Entry {
        try await client().get(key)
    }

    func put(_ key: String, value: Data, ifVersion: UInt64?, ephemeral: Bool) async throws(SharedStateError) -> PutResult {
        try await client().put(key, value: value, ifVersion: ifVersion, ephemeral: ephemeral)
    }

    func delete(_ key: String, ifVersion: UInt64?) async throws(SharedStateError) -> UInt64 {
        try await client().delete(key, ifVersion: ifVersion)
    }

    func list(prefix: String, limit: Int?) async throws(SharedStateError) -> ListResult {
        try await client().list(prefix: prefix, limit: limit)
    }

    func transaction(_ transaction: Transaction) async throws(SharedStateError) -> TransactionResult {
        try await client().transaction(transaction)
    }

    func watch(prefixes: [String], fromRevision: UInt64?) -> WatchStream {
        // Connecting is asynchronous and this is not: a task connects, then relays the client's
        // watch into a buffer of its own, which folds like any other when the consumer is slow.
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
        let (stream, continuation) = AsyncStream.makeStream(of: ConnectionState.self)
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
