import Lobby
import SharedState
import Testing

@MainActor @Test func countsWhatEveryProcessCountsAndOneMorePerOpen() async throws {
    let sharedState = InMemorySharedState(["lobby/visitors": "2"])
    let (lines, typing) = AsyncStream<String>.makeStream()
    let store = TestStore(initialState: Lobby.State()) {
        Lobby()
    } withDependencies: {
        $0.sharedState = sharedState
        $0.commandLines = CommandLines { lines }
    }
    await store.send(.start)
    await store.receive(\.visitorsChanged) { $0.visitors = 2 }

    typing.yield("open")
    await store.receive(\.command)
    // The write's answer and the watch's change come from two effects: in either order.
    await store.receive(inAnyOrder: [.matching(\.counted), .matching(\.visitorsChanged)]) { $0.visitors = 3 }

    try await sharedState.put("lobby/visitors", json: "10")  // another process
    await store.receive(\.visitorsChanged) { $0.visitors = 10 }

    typing.yield("close")
    await store.receive(\.command) { $0.problem = #"unknown command "close": type open"# }

    typing.finish()
    await store.skipInFlightEffects()  // the watch runs until cancelled
    await store.finish()
}
