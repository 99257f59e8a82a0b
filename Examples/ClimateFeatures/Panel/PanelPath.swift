import SharedState

/// The screens the panel can push on its stack, each named as requests and the saved screen name
/// it: `sensor/<name>` is a live ``SensorScreen``, any other name a page that shows its name.
public struct PanelPath: Reducer, Sendable {
    @CasePathable
    public enum State: Equatable, Sendable {
        case sensor(SensorScreen.State)
        /// A screen with nothing live on it (`alert/door open`, `settings`): its name is all it shows.
        case page(String)

        /// The screen a request or the saved stack names.
        public init(screen name: String) {
            let sensorPrefix = "sensor/"
            if name.hasPrefix(sensorPrefix), name.count > sensorPrefix.count {
                self = .sensor(SensorScreen.State(sensor: String(name.dropFirst(sensorPrefix.count))))
            } else {
                self = .page(name)
            }
        }

        /// The screen's name, as saved at `climate/panel/screen`.
        public var name: String {
            switch self {
            case .sensor(let screen): "sensor/\(screen.sensor)"
            case .page(let name): name
            }
        }

        /// What the panel shows of the screen while it is on top, beyond its name.
        var detail: String? {
            switch self {
            case .sensor(let screen): screen.detail
            case .page: nil
            }
        }

        /// The action that starts the screen's live work, for a screen that has some.
        var start: Action? {
            switch self {
            case .sensor: .sensor(.start)
            case .page: nil
            }
        }
    }

    @CasePathable
    public enum Action: Equatable, Sendable {
        case sensor(SensorScreen.Action)
    }

    public init() {}

    public var body: some ReducerOf<Self> {
        Scope(state: \.sensor, action: \.sensor) { SensorScreen() }
    }
}
