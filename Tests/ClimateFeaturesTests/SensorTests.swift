import ClimateFeatures
import SharedState
import Testing

@MainActor
@Suite struct SensorTests {
    @Test func publishesEachReadingThenStops() async throws {
        let clock = TestClock()
        let sharedState = InMemorySharedState()
        let store = TestStore(initialState: Sensor.State(name: "kitchen", baseCelsius: 20, interval: .seconds(1), readings: 2)) {
            Sensor()
        } withDependencies: {
            $0.continuousClock = clock
            $0.sharedState = sharedState
        }
        let first = Reading(celsius: Sensor.celsius(base: 20, sequence: 1), sequence: 1)
        let second = Reading(celsius: Sensor.celsius(base: 20, sequence: 2), sequence: 2)

        await store.send(.start)
        await clock.advance(by: .seconds(1))
        await store.receive(.tick) {
            $0.latest = first
            $0.publishing = first
            $0.remaining = 1
        }
        await store.receive(\.published) {
            $0.published = first
            $0.publishing = nil
        }
        await clock.advance(by: .seconds(1))
        await store.receive(.tick) {
            $0.latest = second
            $0.publishing = second
            $0.remaining = 0
        }
        await store.receive(\.published) {
            $0.published = second
            $0.publishing = nil
        }
        await store.finish()

        #expect(try await sharedState.get(.reading(of: "kitchen")) == second)
        #expect(try await sharedState.get(.online("kitchen")) == true)
        await sharedState.endSession()
        #expect(try await sharedState.get(.online("kitchen")) == false)
    }

    @Test func readingsTakenDuringAWriteAreCoalescedToTheLatest() async throws {
        let sharedState = InMemorySharedState()
        let first = Reading(celsius: Sensor.celsius(base: 20, sequence: 1), sequence: 1)
        let second = Reading(celsius: Sensor.celsius(base: 20, sequence: 2), sequence: 2)
        let third = Reading(celsius: Sensor.celsius(base: 20, sequence: 3), sequence: 3)
        var state = Sensor.State(name: "hall", readings: 2)
        state.latest = first
        state.publishing = first  // a write of the first reading is in flight
        let store = TestStore(initialState: state) {
            Sensor()
        } withDependencies: {
            $0.sharedState = sharedState
        }
        // Readings taken meanwhile start no write of their own.
        await store.send(.tick) {
            $0.latest = second
            $0.remaining = 1
        }
        await store.send(.tick) {
            $0.latest = third
            $0.remaining = 0
        }
        // The acknowledgement writes the latest, skipping the second.
        await store.send(.published(.success(PutResult(revision: 1, version: 1)))) {
            $0.published = first
            $0.publishing = third
        }
        await store.receive(\.published) {
            $0.published = third
            $0.publishing = nil
        }
        await store.finish()
        #expect(try await sharedState.get(.reading(of: "hall")) == third)
        #expect(try await sharedState.get("climate/sensors/hall").version == 1)
    }
}
