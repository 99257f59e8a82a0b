import SharedState

/// The controller: reduces every sensor's reading into one decision for the heater, published
/// at `climate/heater`, and asks the panel to show an alert when it gets too hot.
///
/// It follows `climate/target` live (`syncctl put climate/target 23`), and switches with a
/// hysteresis of `band` so the heater does not flap around the target.
public struct Thermostat: Reducer, Sendable {
    public struct State: Equatable, Sendable {
        public var target: Double = 21
        public var band: Double
        public var alertAboveCelsius: Double
        public var readings: [String: Reading] = [:]
        /// Sensor keys whose value is not a reading (schema drift), with the reason.
        public var unreadable: [String: String] = [:]
        public var decision: HeaterDecision?
        /// The decision being written; one write at a time keeps syncd's value the latest.
        public var publishing: HeaterDecision?
        /// The last decision syncd acknowledged.
        public var published: HeaterDecision?
        public var isAlerting = false
        /// The revision of the latest readings.
        public var revision: UInt64 = 0
        public var lastError: String?

        public init(band: Double = 0.5, alertAboveCelsius: Double = 30) {
            self.band = band
            self.alertAboveCelsius = alertAboveCelsius
        }

        /// The average of the readings, rounded to 0.01 °C; nil without readings.
        var averageCelsius: Double? {
            guard !readings.isEmpty else { return nil }
            let sum = readings.values.reduce(0) { $0 + $1.celsius }
            return (sum / Double(readings.count) * 100).rounded() / 100
        }
    }

    @CasePathable
    public enum Action: Equatable, Sendable {
        case start
        case targetChanged(Result<Double, SharedStateError>)
        case readingsChanged(SharedItems<Reading>)
        case watchEnded(SharedStateError)
        case decisionPublished(Result<PutResult, SharedStateError>)
        case alertPublished(Result<PutResult, SharedStateError>)
    }

    enum CancelID { case target, readings }

    public init() {}

    public var body: some ReducerOf<Self> {
        Reduce { state, action in
            switch action {
            case .start:
                return .merge(
                    .observe(.target) { .targetChanged($0) }.cancellable(id: CancelID.target, cancelInFlight: true),
                    .observe(prefix: ClimateKeys.sensors, as: Reading.self) {
                        .readingsChanged($0)
                    } catch: {
                        .watchEnded($0)
                    }
                    .cancellable(id: CancelID.readings, cancelInFlight: true)
                )

            case .targetChanged(.success(let target)):
                state.target = target
                return decide(&state)

            case .targetChanged(.failure(let error)):
                // A target that is not a number keeps the last good one.
                state.lastError = error.message
                return .none

            case .readingsChanged(let items):
                var readings = state.readings
                items.apply(to: &readings)
                state.readings = readings
                state.revision = items.revision
                if items.replacesAll { state.unreadable.removeAll() }
                for key in items.deletes { state.unreadable[key] = nil }
                for item in items.puts {
                    switch item.value {
                    case .success: state.unreadable[item.key] = nil
                    case .failure(let error): state.unreadable[item.key] = error.message
                    }
                }
                return decide(&state)

            case .watchEnded(let error):
                state.lastError = error.message
                return .none

            case .decisionPublished(.success):
                state.published = state.publishing
                state.publishing = nil
                return publishDecision(&state)

            case .decisionPublished(.failure(let error)):
                // The next reading tries again.
                state.publishing = nil
                state.lastError = error.message
                return .none

            case .alertPublished(.success):
                return .none

            case .alertPublished(.failure(let error)):
                state.lastError = error.message
                return .none
            }
        }
    }

    /// Decides the heater's mode from the average, and publishes the decision and any alert.
    private func decide(_ state: inout State) -> Effect<Action> {
        guard let average = state.averageCelsius else { return .none }
        let previous = state.decision?.mode ?? .idle
        let mode: HeaterMode =
            if average < state.target - state.band { .heating } else if average > state.target + state.band { .idle } else { previous }
        let decision = HeaterDecision(mode: mode, averageCelsius: average, sensors: state.readings.count)
        state.decision = decision
        var effects = [publishDecision(&state)]
        if average > state.alertAboveCelsius && !state.isAlerting {
            state.isAlerting = true
            let request = PanelRequest(command: .push, screen: "alert/\(average) °C is above \(state.alertAboveCelsius) °C")
            let key = SharedKey<PanelRequest?>(ClimateKeys.panelRequests + "thermostat-alert-r\(state.revision)", default: nil)
            effects.append(.set(key, to: request, ifVersion: 0, then: { .alertPublished($0) }))
        } else if average <= state.alertAboveCelsius {
            state.isAlerting = false
        }
        return .merge(effects)
    }

    /// Writes the current decision unless a write is in flight (its acknowledgement writes the
    /// current decision again), so writes reach syncd in order.
    private func publishDecision(_ state: inout State) -> Effect<Action> {
        guard state.publishing == nil, let decision = state.decision, decision != state.published else { return .none }
        state.publishing = decision
        return .set(.heater, to: decision, then: { .decisionPublished($0) })
    }
}
