import Foundation
import SharedState

/// A temperature sensor: takes a reading every `interval` and publishes it at
/// `climate/sensors/<name>`, while an ephemeral `climate/online/<name>` says it is running.
///
/// Readings follow a fixed curve around `baseCelsius` (the example has no real hardware), so a
/// run is reproducible: reading n is `baseCelsius + 2 · sin(n / 4)`.
public struct Sensor: Reducer, Sendable {
    public struct State: Equatable, Sendable {
        public var name: String
        public var baseCelsius: Double
        public var interval: Duration
        /// Readings left to take; nil to go on until stopped.
        public var remaining: Int?
        public var latest: Reading?
        /// The reading being written; one write at a time keeps syncd's value the latest.
        public var publishing: Reading?
        /// The last reading syncd acknowledged.
        public var published: Reading?
        public var lastError: String?

        public init(name: String, baseCelsius: Double = 20, interval: Duration = .seconds(1), readings: Int? = nil) {
            self.name = name
            self.baseCelsius = baseCelsius
            self.interval = interval
            self.remaining = readings
        }
    }

    @CasePathable
    public enum Action: Equatable, Sendable {
        case start
        case tick
        case published(Result<PutResult, SharedStateError>)
        case stop
    }

    enum CancelID { case timer }

    @Dependency(\.continuousClock) var clock

    public init() {}

    /// The reading a sensor at `baseCelsius` takes the `sequence`-th time.
    public static func celsius(base: Double, sequence: Int) -> Double {
        ((base + 2 * sin(Double(sequence) / 4)) * 100).rounded() / 100
    }

    public func reduce(into state: inout State, action: Action) -> Effect<Action> {
        switch action {
        case .start:
            let online = Effect<Action>.set(.online(state.name), to: true, ephemeral: true)
            guard state.remaining != 0 else { return online }
            let interval = state.interval
            let timer = Effect<Action>.run { send in
                while true {
                    try await clock.sleep(for: interval)
                    await send(.tick)
                }
            }
            return .merge(online, timer.cancellable(id: CancelID.timer, cancelInFlight: true))

        case .tick:
            guard state.remaining != 0 else { return .none }
            let sequence = (state.latest?.sequence ?? 0) + 1
            let reading = Reading(celsius: Self.celsius(base: state.baseCelsius, sequence: sequence), sequence: sequence)
            state.latest = reading
            state.remaining = state.remaining.map { $0 - 1 }
            let publish = publishLatest(&state)
            return state.remaining == 0 ? .merge(publish, .cancel(id: CancelID.timer)) : publish

        case .published(.success):
            state.published = state.publishing
            state.publishing = nil
            state.lastError = nil
            return publishLatest(&state)

        case .published(.failure(let error)):
            // The next reading tries again.
            state.publishing = nil
            state.lastError = error.message
            return .none

        case .stop:
            return .cancel(id: CancelID.timer)
        }
    }

    /// Writes the latest reading unless a write is in flight (its acknowledgement writes the
    /// latest again), so writes reach syncd in order.
    private func publishLatest(_ state: inout State) -> Effect<Action> {
        guard state.publishing == nil, let latest = state.latest, latest != state.published else { return .none }
        state.publishing = latest
        return .set(.reading(of: state.name), to: latest, then: { .published($0) })
    }
}
