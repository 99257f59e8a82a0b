import Foundation
import SharedState
import SyncClient
import Testing

/// The faults a feature's tests inject: writes refused, watches ended, syncd going away and
/// coming back; and a backend of the test's own, which any type can be.
@Suite(.timeLimit(.minutes(1))) struct FaultInjectionTests {
    /// The README's "Testing what goes wrong": a refused write reaches the reducer.
    // snippet: refused-write-test
    @MainActor @Test func aRefusedWriteReachesTheReducer() async throws {
        let sharedState = InMemorySharedState()
        let store = TestStore(initialState: Dashboard.State()) {
            Dashboard()
        } withDependencies: {
            $0.sharedState = sharedState
        }
        sharedState.failNextWrites(with: SharedStateError(.permissionDenied, "this process may not write lobby/target"))
        await store.send(.targetPicked(22)) { $0.target = 22 }
        await store.receive(\.targetSaved) { $0.saveFailure = "this process may not write lobby/target" }
        #expect(sharedState.json("lobby/target") == nil)
        // Only the next write failed.
        await store.send(.targetPicked(23)) { $0.target = 23 }
        await store.receive(\.targetSaved) { $0.saveFailure = nil }
        #expect(sharedState.json("lobby/target") == "23")
        await store.finish()
    }
    // snippet end

    @Test func failedWritesChangeNothingAndCountDown() async throws {
        let sharedState = InMemorySharedState(["a": "1"])
        sharedState.failNextWrites(2, with: SharedStateError(.unavailable, "syncd could not commit"))
        for _ in 0..<2 {
            await #expect(throws: SharedStateError.self) { try await sharedState.put("a", json: "2") }
        }
        #expect(sharedState.revision == 1 && sharedState.json("a") == "1")
        let result = try await sharedState.put("a", json: "3")
        #expect(result.revision == 2)
    }

    @MainActor @Test func anEndedWatchReachesItsHandler() async throws {
        let sharedState = InMemorySharedState(["doors/1": #"{"isLocked":true}"#])
        let store = TestStore(initialState: DoorWatcher.State()) {
            DoorWatcher()
        } withDependencies: {
            $0.sharedState = sharedState
        }
        await store.send(.start)
        await store.receive(\.doorsChanged) { $0.doors = ["doors/1": Door(isLocked: true)] }
        let refused = SharedStateError(.permissionDenied, "the access policy no longer lets this process read doors/")
        sharedState.endWatches(with: refused)
        await store.receive(.watchEnded(refused)) { $0.problem = refused.message }
        #expect(sharedState.watchedPrefixes.isEmpty)
        await store.finish()
    }

    @Test func presenceIsDroppedWhileSyncdIsAwayAndPutBackAfter() async throws {
        let sharedState = InMemorySharedState()
        try await sharedState.put("lobby/online/panel", json: "true", ephemeral: true)
        var states = sharedState.connectionStates().makeAsyncIterator()
        #expect(await states.next() == .connected)
        var batches = sharedState.watch(prefixes: ["lobby/online/"]).makeAsyncIterator()
        #expect(try await batches.next()?.changes.map(\.key) == ["lobby/online/panel"])

        await sharedState.loseConnection()
        #expect(await states.next() == .reconnecting)
        let dropped = try await batches.next()
        #expect(dropped?.changes.map(\.type) == [.delete])
        #expect(sharedState.json("lobby/online/panel") == nil)

        await sharedState.reconnect()
        let putBack = try await batches.next()
        #expect(putBack?.changes.map(\.key) == ["lobby/online/panel"])
        #expect(putBack?.changes.first?.entry.ephemeralSession != 0)
        #expect(await states.next() == .connected)
        #expect(sharedState.json("lobby/online/panel") == "true")
    }

    @Test func aBackendOfOurOwnFeedsItsWatchesFromAnyAsyncSequence() async throws {
        let batch = WatchBatch(kind: .snapshot, revision: 7, changes: [])
        let refused = SharedStateError(.permissionDenied, "refused")
        let stream = WatchStream(
            AsyncThrowingStream<WatchBatch, any Error> { continuation in
                continuation.yield(batch)
                continuation.finish(throwing: refused)
            })
        var received: [WatchBatch] = []
        await #expect(throws: SharedStateError.self) {
            for try await next in stream { received.append(next) }
        }
        #expect(received == [batch])
    }

    /// The failing backend a test of a feature's error path needs, written outside the library.
    @MainActor @Test func anyTypeCanBeTheSharedStateBackend() async throws {
        let refused = SharedStateError(.permissionDenied, "this process may read nothing")
        let store = TestStore(initialState: DoorWatcher.State()) {
            DoorWatcher()
        } withDependencies: {
            $0.sharedState = RefusingBackend(error: refused)
        }
        await store.send(.start)
        await store.receive(.watchEnded(refused)) { $0.problem = refused.message }
        await store.finish()
    }

    @Test func aConsumerThatStopsStopsTheSequenceItReads() async throws {
        let (source, continuation) = AsyncStream.makeStream(of: WatchBatch.self)
        let (ended, endedContinuation) = AsyncStream.makeStream(of: Void.self)
        continuation.onTermination = { _ in endedContinuation.yield() }
        continuation.yield(WatchBatch(kind: .snapshot, revision: 1, changes: []))
        do {
            let stream = WatchStream(source)
            for try await _ in stream { break }
        }
        var iterator = ended.makeAsyncIterator()
        await iterator.next()  // the reader was cancelled, so the source's iteration ended
    }
}

/// A list of doors that says when its watch ended.
struct DoorWatcher: Reducer, Sendable {
    struct State: Equatable, Sendable {
        var doors: [String: Door] = [:]
        var problem: String?
    }

    @CasePathable
    enum Action: Equatable, Sendable {
        case start
        case doorsChanged(SharedItems<Door>)
        case watchEnded(SharedStateError)
    }

    func reduce(into state: inout State, action: Action) -> Effect<Action> {
        switch action {
        case .start:
            return .observe(prefix: "doors/", as: Door.self, { .doorsChanged($0) }, catch: { .watchEnded($0) })
        case .doorsChanged(let items):
            items.apply(to: &state.doors)
            return .none
        case .watchEnded(let error):
            state.problem = error.message
            return .none
        }
    }
}

/// A backend that refuses everything with one error: its watches end with it at once.
struct RefusingBackend: SharedStateBackend {
    let error: SharedStateError

    func get(_ key: String) async throws(SharedStateError) -> Entry { throw error }
    func put(_ key: String, value: Data, ifVersion: UInt64?, ephemeral: Bool) async throws(SharedStateError) -> PutResult { throw error }
    func delete(_ key: String, ifVersion: UInt64?) async throws(SharedStateError) -> UInt64 { throw error }
    func list(prefix: String, limit: Int?) async throws(SharedStateError) -> ListResult { throw error }
    func count(prefix: String) async throws(SharedStateError) -> CountResult { throw error }
    func perform<Read: SharedStateRead>(_ read: Read) async throws(SharedStateError) -> Read.Result { throw error }
    func transaction(_ transaction: Transaction) async throws(SharedStateError) -> TransactionResult { throw error }

    func watch(prefixes: [String], fromRevision: UInt64?) -> WatchStream {
        WatchStream(AsyncThrowingStream<WatchBatch, any Error> { [error] in $0.finish(throwing: error) })
    }

    func connectionStates() -> AsyncStream<ConnectionState> {
        AsyncStream { $0.yield(.connected) }
    }
}

/// What a test builds its expectations from: the batch a write produced, as a watch got it.
@Suite struct SharedItemsOfAWriteTests {
    @Test func theItemsOfAWriteAreWhatAWatchOfThePrefixGot() async throws {
        let sharedState = InMemorySharedState(["doors/1": #"{"isLocked":false}"#, "lights/1": "true"])
        var watch = sharedState.watch(prefixes: ["doors/"]).makeAsyncIterator()
        _ = try await watch.next()  // the snapshot
        let write = try await sharedState.transaction(
            Transaction(onSuccess: [
                .put("doors/1", json: #"{"isLocked":true}"#), .put("doors/2", json: #"{"isLocked":false}"#),
                .put("lights/1", json: "false"),
            ]))
        let seen = try #require(try await watch.next())
        let expected = SharedItems(seen, as: Door.self)
        #expect(sharedState.items(at: write.revision, under: "doors/", as: Door.self) == expected)
        // Without a revision: the latest that changed a key under the prefix.
        try await sharedState.put("lights/1", json: "true")
        #expect(sharedState.items(under: "doors/", as: Door.self) == expected)
        #expect(expected.puts.map(\.key) == ["doors/1", "doors/2"] && expected.puts[0].version == 2)
        // A revision that changed nothing under the prefix gives a batch without changes.
        let lights = sharedState.items(at: sharedState.revision, under: "doors/", as: Door.self)
        #expect(lights == SharedItems(revision: sharedState.revision, replacesAll: false, puts: [], deletes: []))
    }
}
