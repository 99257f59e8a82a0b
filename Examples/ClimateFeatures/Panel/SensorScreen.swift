import Foundation
import SharedState

/// The panel's screen for one sensor: it follows the sensor's latest reading while it is on the
/// panel's stack, and stops when it is popped.
public struct SensorScreen: Reducer, Sendable {
    public struct State: Equatable, Sendable {
        /// The sensor's name, as in `climate/sensors/<name>`.
        public var sensor: String
        public var reading: Reading?
        public var lastError: String?

        public init(sensor: String, reading: Reading? = nil) {
            self.sensor = sensor
            self.reading = reading
        }

        /// What the panel shows while this screen is on top.
        public var detail: String {
            guard let reading else { return "\(sensor): no reading yet" }
            return "\(sensor): \(String(format: "%.1f", reading.celsius)) °C"
        }
    }

    @CasePathable
    public enum Action: Equatable, Sendable {
        /// Sent by the panel when it shows the screen.
        case start
        case readingChanged(Result<Reading?, SharedStateError>)
    }

    enum CancelID { case reading }

    @Dependency(\.sharedState) var sharedState

    public init() {}

    public func reduce(into state: inout State, action: Action) -> Effect<Action> {
        switch action {
        case .start:
            return .observe(.reading(of: state.sensor)) { .readingChanged($0) }
                .cancellable(id: CancelID.reading, cancelInFlight: true)
        case .readingChanged(.success(let reading)):
            state.reading = reading
            state.lastError = nil
            return .none
        case .readingChanged(.failure(let error)):
            state.lastError = error.message
            return .none
        }
    }
}
