import ClimateFeatures
import Foundation
import SharedState
import Synchronization
import Testing

@MainActor
@Suite struct PanelTests {
    /// A store of the panel over `sharedState`, whose shown lines go to `shown`.
    private func panel(_ sharedState: InMemorySharedState, shown: ShownLines? = nil) -> TestStore<Panel.State, Panel.Action> {
        TestStore(initialState: Panel.State()) {
            Panel()
        } withDependencies: {
            $0.sharedState = sharedState
            if let shown { $0.panelDisplay = PanelDisplay { line in shown.append(line) } }
        }
    }

    /// The panel's start-up with nothing saved: the stack is loaded, the heater's first answer
    /// comes in, then the requests' snapshot (which `requests` checks).
    private func start(
        _ store: TestStore<Panel.State, Panel.Action>,
        requests: ((inout Panel.State) throws -> Void)? = nil
    ) async {
        await store.send(.start)
        await store.receive(.screenLoaded(.success(Panel.Saved(screen: PanelScreen(), version: 0)))) { $0.isLoaded = true }
        await store.receive(.heaterChanged(.success(nil))) { $0.isWatchingRequests = true }
        await store.receive(\.requestsChanged, assert: requests)
    }

    private func pending(_ name: String, revision: UInt64, _ request: PanelRequest) -> Panel.Pending {
        Panel.Pending(key: ClimateKeys.panelRequests + name, version: 1, createRevision: revision, request: request)
    }

    @Test func appliesRequestsInOrderExactlyOnce() async throws {
        let sharedState = InMemorySharedState()
        let shown = ShownLines()
        let store = panel(sharedState, shown: shown)
        try await sharedState.put("climate/panel/requests/b", json: #"{"command":"push","screen":"settings"}"#)
        try await sharedState.put("climate/panel/requests/a", json: #"{"command":"push","screen":"alert/too hot"}"#)
        // Created first, applied first: b, then a.
        let b = pending("b", revision: 1, PanelRequest(command: .push, screen: "settings"))
        let a = pending("a", revision: 2, PanelRequest(command: .push, screen: "alert/too hot"))

        await start(store) {
            $0.applying = b
            $0.pending = [a]
        }
        await store.receive(\.requestsChanged)  // b's deletion, by the panel's own transaction
        await store.receive(.requestApplied(b, screen: PanelScreen(path: ["overview", "settings"], applied: 1))) {
            $0.path.append(.page("settings"))
            $0.applied = 1
            $0.screenVersion = 1
            $0.applying = a
            $0.pending = []
        }
        await store.receive(\.requestsChanged)
        await store.receive(.requestApplied(a, screen: PanelScreen(path: ["overview", "settings", "alert/too hot"], applied: 2))) {
            $0.path.append(.page("alert/too hot"))
            $0.applied = 2
            $0.screenVersion = 2
            $0.applying = nil
        }

        try await sharedState.put("climate/panel/requests/c", json: #"{"command":"pop"}"#)
        let c = pending("c", revision: 5, PanelRequest(command: .pop))
        await store.receive(\.requestsChanged) { $0.applying = c }
        await store.receive(\.requestsChanged)
        await store.receive(.requestApplied(c, screen: PanelScreen(path: ["overview", "settings"], applied: 3))) {
            $0.path.removeLast()
            $0.applied = 3
            $0.screenVersion = 3
            $0.applying = nil
        }

        #expect(try await sharedState.list(prefix: ClimateKeys.panelRequests, limit: nil).entries.isEmpty)
        #expect(try await sharedState.get(.panelScreen) == PanelScreen(path: ["overview", "settings"], applied: 3))
        try await waitFor { shown.last == "panel: overview › settings  [heater unknown; 3 requests applied]" }
        await store.skipInFlightEffects()  // the heater's and the requests' watches
        await store.finish()
    }

    @Test func aSensorScreenFollowsItsSensorUntilItIsPopped() async throws {
        let sharedState = InMemorySharedState(["climate/sensors/kitchen": #"{"celsius":21.25,"sequence":3}"#])
        let shown = ShownLines()
        let store = panel(sharedState, shown: shown)
        await start(store)

        try await sharedState.put("climate/panel/requests/1", json: #"{"command":"push","screen":"sensor/kitchen"}"#)
        let push = pending("1", revision: 2, PanelRequest(command: .push, screen: "sensor/kitchen"))
        await store.receive(\.requestsChanged) { $0.applying = push }
        await store.receive(\.requestsChanged)
        await store.receive(.requestApplied(push, screen: PanelScreen(path: ["overview", "sensor/kitchen"], applied: 1))) {
            $0.path.append(.sensor(SensorScreen.State(sensor: "kitchen")))
            $0.applied = 1
            $0.screenVersion = 1
            $0.applying = nil
        }
        // The panel starts the screen it pushed; the screen watches its sensor.
        await store.receive(.path(.element(id: 0, action: .sensor(.start))))
        await store.receive(.path(.element(id: 0, action: .sensor(.readingChanged(.success(Reading(celsius: 21.25, sequence: 3))))))) {
            $0.path[id: 0] = .sensor(SensorScreen.State(sensor: "kitchen", reading: Reading(celsius: 21.25, sequence: 3)))
        }
        try await sharedState.set(.reading(of: "kitchen"), to: Reading(celsius: 22.5, sequence: 4))
        await store.receive(.path(.element(id: 0, action: .sensor(.readingChanged(.success(Reading(celsius: 22.5, sequence: 4))))))) {
            $0.path[id: 0] = .sensor(SensorScreen.State(sensor: "kitchen", reading: Reading(celsius: 22.5, sequence: 4)))
        }
        try await waitFor {
            shown.last == "panel: overview › sensor/kitchen  [heater unknown; 1 requests applied]  kitchen: 22.5 °C"
        }

        // Popped: the screen's watch ends with it.
        try await sharedState.put("climate/panel/requests/2", json: #"{"command":"root"}"#)
        let root = pending("2", revision: 5, PanelRequest(command: .root))
        await store.receive(\.requestsChanged) { $0.applying = root }
        await store.receive(\.requestsChanged)
        await store.receive(.requestApplied(root, screen: PanelScreen(path: ["overview"], applied: 2))) {
            $0.path.removeAll()
            $0.applied = 2
            $0.screenVersion = 2
            $0.applying = nil
        }
        try await waitFor { !sharedState.watchedPrefixes.contains(["climate/sensors/kitchen"]) }
        try await sharedState.set(.reading(of: "kitchen"), to: Reading(celsius: 23, sequence: 5))
        await store.skipInFlightEffects()
        await store.finish()
    }

    @Test func aRestartRestoresTheStackAndNeitherLosesNorRepeatsARequest() async throws {
        let sharedState = InMemorySharedState(["climate/sensors/hall": #"{"celsius":19,"sequence":1}"#])
        try await sharedState.put("climate/panel/requests/1", json: #"{"command":"push","screen":"sensor/hall"}"#)

        let first = Store(initialState: Panel.State()) {
            Panel()
        } withDependencies: {
            $0.sharedState = sharedState
        }
        first.send(.start)
        try await waitFor { first.applied == 1 }
        first.shutDown()

        // Published while no panel runs.
        try await sharedState.put("climate/panel/requests/2", json: #"{"command":"push","screen":"alert/hot"}"#)

        let second = panel(sharedState)
        await second.send(.start)
        let saved = PanelScreen(path: ["overview", "sensor/hall"], applied: 1)
        await second.receive(.screenLoaded(.success(Panel.Saved(screen: saved, version: 1)))) {
            $0.isLoaded = true
            $0.screenVersion = 1
            $0.applied = 1
            $0.path.append(.sensor(SensorScreen.State(sensor: "hall")))
        }
        // The restored screen starts again. Its watch and the heater's run side by side.
        await second.receive(.path(.element(id: 0, action: .sensor(.start))))
        let hall = Reading(celsius: 19, sequence: 1)
        // snippet: panel-in-any-order
        await second.receive(inAnyOrder: [
            .heaterChanged(.success(nil)),
            .path(.element(id: 0, action: .sensor(.readingChanged(.success(hall))))),
        ]) {
            $0.isWatchingRequests = true
            $0.path[id: 0] = .sensor(SensorScreen.State(sensor: "hall", reading: hall))
        }
        // snippet end
        let alert = pending("2", revision: 4, PanelRequest(command: .push, screen: "alert/hot"))
        await second.receive(\.requestsChanged) { $0.applying = alert }
        await second.receive(\.requestsChanged)
        await second.receive(.requestApplied(alert, screen: PanelScreen(path: ["overview", "sensor/hall", "alert/hot"], applied: 2))) {
            $0.path.append(.page("alert/hot"))
            $0.applied = 2
            $0.screenVersion = 2
            $0.applying = nil
        }
        #expect(try await sharedState.get(.panelScreen) == PanelScreen(path: ["overview", "sensor/hall", "alert/hot"], applied: 2))
        await second.skipInFlightEffects()
        await second.finish()
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
        let store = panel(sharedState)
        await store.send(.start)
        await store.receive(\.screenLoaded) {
            $0.lastError = #"cannot load the saved screen: the value of key "climate/panel/screen" is not a PanelScreen: /path: missing"#
        }
        await store.finish()
        #expect(sharedState.json("climate/panel/screen") == #"{"stack":[]}"#)
    }
}

/// The lines a panel showed.
final class ShownLines: Sendable {
    private let lines = Mutex<[String]>([])

    var last: String? { lines.withLock { $0.last } }

    func append(_ line: String) {
        lines.withLock { $0.append(line) }
    }
}
