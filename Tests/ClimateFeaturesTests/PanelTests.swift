import ClimateFeatures
import Foundation
import SharedState
import Synchronization
import Testing

@MainActor
@Suite struct PanelTests {
    @Test func appliesRequestsInOrderExactlyOnce() async throws {
        let sharedState = InMemorySharedState()
        let shown = Mutex<[String]>([])
        let store = TestStore(initialState: Panel.State()) {
            Panel()
        } withDependencies: {
            $0.sharedState = sharedState
            $0.panelDisplay = PanelDisplay { line in shown.withLock { $0.append(line) } }
        }
        store.exhaustivity = .off
        try await sharedState.put("climate/panel/requests/b", json: #"{"command":"push","screen":"sensor/hall"}"#)
        try await sharedState.put("climate/panel/requests/a", json: #"{"command":"push","screen":"sensor/kitchen"}"#)

        await store.send(.start)
        await store.receive(\.screenLoaded) { $0.isLoaded = true }
        // Created first, applied first: b, then a.
        await store.receive(\.requestApplied) {
            $0.screen = PanelScreen(path: ["overview", "sensor/hall"], applied: 1)
        }
        await store.receive(\.requestApplied) {
            $0.screen = PanelScreen(path: ["overview", "sensor/hall", "sensor/kitchen"], applied: 2)
        }
        try await sharedState.put("climate/panel/requests/c", json: #"{"command":"pop"}"#)
        await store.receive(\.requestApplied) {
            $0.screen = PanelScreen(path: ["overview", "sensor/hall"], applied: 3)
        }
        #expect(try await sharedState.list(prefix: ClimateKeys.panelRequests, limit: nil).entries.isEmpty)
        #expect(try await sharedState.get(.panelScreen) == PanelScreen(path: ["overview", "sensor/hall"], applied: 3))
        #expect(shown.withLock { $0.last } == "panel: overview › sensor/hall  [heater unknown; 3 requests applied]")
        await store.skipInFlightEffects()
        await store.finish()
    }

    @Test func aRestartNeitherLosesNorRepeatsARequest() async throws {
        let sharedState = InMemorySharedState()
        try await sharedState.put("climate/panel/requests/1", json: #"{"command":"push","screen":"sensor/hall"}"#)

        let first = Store(initialState: Panel.State()) {
            Panel()
        } withDependencies: {
            $0.sharedState = sharedState
        }
        first.send(.start)
        try await waitFor { first.screen.applied == 1 }
        first.shutDown()

        // Published while no panel runs.
        try await sharedState.put("climate/panel/requests/2", json: #"{"command":"push","screen":"alert/hot"}"#)

        let second = Store(initialState: Panel.State()) {
            Panel()
        } withDependencies: {
            $0.sharedState = sharedState
        }
        second.send(.start)
        try await waitFor { second.screen.applied == 2 }
        try await Task.sleep(for: .milliseconds(50))
        #expect(second.screen == PanelScreen(path: ["overview", "sensor/hall", "alert/hot"], applied: 2))
        second.shutDown()
    }

    @Test func anInvalidRequestIsRemovedAndCounted() async throws {
        let sharedState = InMemorySharedState()
        try await sharedState.put("climate/panel/requests/x", json: #"{"command":"fly"}"#)
        try await sharedState.put("climate/panel/requests/y", json: #"{"command":"push"}"#)
        let store = Store(initialState: Panel.State()) {
            Panel()
        } withDependencies: {
            $0.sharedState = sharedState
        }
        store.send(.start)
        try await waitFor { store.rejected == 2 }
        #expect(try await sharedState.list(prefix: ClimateKeys.panelRequests, limit: nil).entries.isEmpty)
        #expect(store.screen == PanelScreen())
        store.shutDown()
    }

    @Test func aSavedScreenThatNoLongerDecodesIsLeftAlone() async throws {
        let sharedState = InMemorySharedState(["climate/panel/screen": #"{"stack":[]}"#])
        let store = TestStore(initialState: Panel.State()) {
            Panel()
        } withDependencies: {
            $0.sharedState = sharedState
        }
        await store.send(.start)
        await store.receive(\.screenLoaded) {
            $0.lastError = #"cannot load the saved screen: the value of key "climate/panel/screen" is not a PanelScreen: {"stack":[]}"#
        }
        await store.finish()
        #expect(sharedState.json("climate/panel/screen") == #"{"stack":[]}"#)
    }
}
