import ClimateFeatures
import Foundation
import SharedState
import Testing

@MainActor
@Suite struct ThermostatTests {
    @Test func heatsBelowTheTargetAndStopsAboveIt() async throws {
        let sharedState = InMemorySharedState()
        let store = TestStore(initialState: Thermostat.State(band: 0.5)) {
            Thermostat()
        } withDependencies: {
            $0.sharedState = sharedState
        }
        store.exhaustivity = .off
        // The target's and the readings' first values arrive in either order; skipping one is fine.
        try await sharedState.set(.reading(of: "kitchen"), to: Reading(celsius: 19, sequence: 1))
        await store.send(.start)
        await store.receive(\.readingsChanged) {
            $0.decision = HeaterDecision(mode: .heating, averageCelsius: 19, sensors: 1)
        }
        await store.receive(\.decisionPublished)
        #expect(try await sharedState.get(.heater) == HeaterDecision(mode: .heating, averageCelsius: 19, sensors: 1))

        // Inside the band the mode stays; above it the heater stops.
        try await sharedState.set(.reading(of: "hall"), to: Reading(celsius: 22.6, sequence: 1))
        await store.receive(\.readingsChanged) {
            $0.decision = HeaterDecision(mode: .heating, averageCelsius: 20.8, sensors: 2)
        }
        try await sharedState.set(.target, to: 20)
        await store.receive(\.targetChanged, .success(20)) {
            $0.target = 20
            $0.decision = HeaterDecision(mode: .idle, averageCelsius: 20.8, sensors: 2)
        }
        try await waitFor { try await sharedState.get(.heater)?.mode == .idle }
        await store.skipInFlightEffects()
        await store.finish()
    }

    @Test func aReadingThatNoLongerDecodesIsSetAsideNotACrash() async throws {
        let sharedState = InMemorySharedState([
            "climate/sensors/kitchen": #"{"celsius":19,"sequence":1}"#,
            "climate/sensors/attic": #"{"fahrenheit":70}"#,
        ])
        let store = TestStore(initialState: Thermostat.State()) {
            Thermostat()
        } withDependencies: {
            $0.sharedState = sharedState
        }
        store.exhaustivity = .off
        await store.send(.start)
        await store.receive(\.readingsChanged) {
            $0.readings = ["climate/sensors/kitchen": Reading(celsius: 19, sequence: 1)]
            $0.decision = HeaterDecision(mode: .heating, averageCelsius: 19, sensors: 1)
        }
        #expect(store.state.unreadable.keys.sorted() == ["climate/sensors/attic"])
        #expect(store.state.unreadable["climate/sensors/attic"]?.contains("is not a Reading") == true)
        // Fixing the value brings the sensor back.
        try await sharedState.set(.reading(of: "attic"), to: Reading(celsius: 21, sequence: 2))
        await store.receive(\.readingsChanged) {
            $0.readings["climate/sensors/attic"] = Reading(celsius: 21, sequence: 2)
            $0.unreadable = [:]
            // 20 °C is below the band around 21 °C.
            $0.decision = HeaterDecision(mode: .heating, averageCelsius: 20, sensors: 2)
        }
        await store.skipInFlightEffects()
        await store.finish()
    }

    @Test func aTargetThatIsNotANumberKeepsTheLastOne() async throws {
        let sharedState = InMemorySharedState(["climate/target": "22"])
        let store = TestStore(initialState: Thermostat.State()) {
            Thermostat()
        } withDependencies: {
            $0.sharedState = sharedState
        }
        store.exhaustivity = .off
        await store.send(.start)
        await store.receive(\.targetChanged) { $0.target = 22 }
        try await sharedState.put("climate/target", value: Data(#""warm""#.utf8))
        await store.receive(\.targetChanged) {
            $0.target = 22
            $0.lastError = #"the value of key "climate/target" is not a Double: expected Double, found a string"#
        }
        await store.skipInFlightEffects()
        await store.finish()
    }

    @Test func tooHotRaisesOneAlertOnThePanelsChannel() async throws {
        let sharedState = InMemorySharedState()
        let store = TestStore(initialState: Thermostat.State(alertAboveCelsius: 30)) {
            Thermostat()
        } withDependencies: {
            $0.sharedState = sharedState
        }
        store.exhaustivity = .off
        await store.send(.start)
        try await sharedState.set(.reading(of: "attic"), to: Reading(celsius: 31, sequence: 1))
        await store.receive(\.alertPublished)
        try await sharedState.set(.reading(of: "attic"), to: Reading(celsius: 32, sequence: 2))
        try await waitFor { try await sharedState.get(.heater)?.averageCelsius == 32 }
        let requests = try await sharedState.list(prefix: ClimateKeys.panelRequests, limit: nil).entries
        #expect(requests.count == 1)
        let request = try JSONDecoder().decode(PanelRequest.self, from: requests[0].value)
        #expect(request.command == .push)
        #expect(request.screen?.hasPrefix("alert/31") == true)
        await store.skipInFlightEffects()
        await store.finish()
    }
}

/// Polls `condition` for up to two seconds.
@MainActor
func waitFor(_ condition: () async throws -> Bool) async throws {
    for _ in 0..<200 {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    Issue.record("condition did not hold within 2 s")
}
