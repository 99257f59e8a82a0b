import Foundation
import SharedState
import Synchronization
import Testing

/// A request runs on its caller's actor until it waits for the answer: from the main actor (where
/// `.set` runs), it reaches the backend without a hop to another thread, which under
/// `MainEventLoop` means the write leaves from the thread that reads syncd's socket.
/// (`MainEventLoopTests` checks that last part with real processes.)
@MainActor
@Suite(.timeLimit(.minutes(1))) struct CallerIsolationTests {
    /// Records the isolation each write arrived with, and otherwise is an `InMemorySharedState`.
    final class IsolationRecorder: SharedStateBackend {
        let state = InMemorySharedState()
        let isolations = Mutex<[String]>([])

        private func record(_ isolation: (any Actor)?) {
            isolations.withLock { $0.append(isolation.map { "\(type(of: $0))" } ?? "none") }
        }

        nonisolated(nonsending) func get(_ key: String) async throws(SharedStateError) -> Entry {
            record(#isolation)
            return try await state.get(key)
        }

        nonisolated(nonsending) func put(_ key: String, value: Data, ifVersion: UInt64?, ephemeral: Bool) async throws(SharedStateError)
            -> PutResult
        {
            record(#isolation)
            return try await state.put(key, value: value, ifVersion: ifVersion, ephemeral: ephemeral)
        }

        nonisolated(nonsending) func delete(_ key: String, ifVersion: UInt64?) async throws(SharedStateError) -> UInt64 {
            record(#isolation)
            return try await state.delete(key, ifVersion: ifVersion)
        }

        nonisolated(nonsending) func list(prefix: String, limit: Int?) async throws(SharedStateError) -> ListResult {
            record(#isolation)
            return try await state.list(prefix: prefix, limit: limit)
        }

        nonisolated(nonsending) func count(prefix: String) async throws(SharedStateError) -> CountResult {
            record(#isolation)
            return try await state.count(prefix: prefix)
        }

        nonisolated(nonsending) func perform<Read: SharedStateRead>(_ read: Read) async throws(SharedStateError) -> Read.Result {
            record(#isolation)
            return try await state.perform(read)
        }

        nonisolated(nonsending) func transaction(_ transaction: Transaction) async throws(SharedStateError) -> TransactionResult {
            record(#isolation)
            return try await state.transaction(transaction)
        }

        func watch(prefixes: [String], fromRevision: UInt64?) -> WatchStream {
            state.watch(prefixes: prefixes, fromRevision: fromRevision)
        }

        func connectionStates() -> AsyncStream<ConnectionState> {
            state.connectionStates()
        }
    }

    struct Writer: Reducer {
        struct State: Equatable {}
        enum Action: Equatable { case write, written(Result<PutResult, SharedStateError>) }

        func reduce(into state: inout State, action: Action) -> Effect<Action> {
            switch action {
            case .write: .set(SharedKey("door/locked", default: false), to: true) { .written($0) }
            case .written: .none
            }
        }
    }

    @Test func theTypedRequestsReachTheBackendOnTheCallersActor() async throws {
        let backend = IsolationRecorder()
        try await backend.set(SharedKey("door/locked", default: false), to: true)
        try await backend.put("door/open", json: "false")
        _ = try await backend.get(SharedKey("door/locked", default: false))
        try await backend.update(SharedKey("door/count", default: 0)) { $0 += 1 }
        #expect(backend.isolations.withLock { $0 } == Array(repeating: "MainActor", count: 5))
    }

    @Test func aSetEffectWritesFromTheMainActor() async throws {
        let backend = IsolationRecorder()
        let store = TestStore(initialState: Writer.State()) {
            Writer()
        } withDependencies: {
            $0.sharedState = backend
        }
        await store.send(.write)
        await store.receive(.written(.success(PutResult(revision: 1, version: 1))))
        #expect(backend.isolations.withLock { $0 } == ["MainActor"])
    }
}
