// The test of the documentation's "Getting started" (SharedState.docc/GettingStarted.md),
// which scripts/check-doc-snippets.py keeps equal to this region.

// snippet: lobby-test
import SharedState
import Testing

@MainActor @Test func countsVisitors() async throws {
    let sharedState = InMemorySharedState(["lobby/visitors": "2"])
    let store = TestStore(initialState: Lobby.State()) {
        Lobby()
    } withDependencies: {
        $0.sharedState = sharedState
    }
    await store.send(.start)
    await store.receive(\.visitorsChanged) { $0.visitors = 2 }
    await store.send(.doorOpened)
    await store.receive(\.visitorsChanged) { $0.visitors = 3 }  // written, then watched back
    await store.skipInFlightEffects()  // the watch runs until cancelled
    await store.finish()
}
// snippet end
