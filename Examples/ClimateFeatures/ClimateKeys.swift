import SharedState

/// A sensor's latest reading, at `climate/sensors/<name>`.
public struct Reading: Codable, Equatable, Sendable {
    /// The temperature.
    public var celsius: Double
    /// How many readings the sensor has taken, this one included.
    public var sequence: Int

    public init(celsius: Double, sequence: Int) {
        self.celsius = celsius
        self.sequence = sequence
    }
}

/// What the heater should do.
public enum HeaterMode: String, Codable, Equatable, Sendable {
    case heating
    case idle
}

/// The thermostat's decision, at `climate/heater`.
public struct HeaterDecision: Codable, Equatable, Sendable {
    public var mode: HeaterMode
    /// The average of the sensors' latest readings, rounded to 0.01 °C.
    public var averageCelsius: Double
    /// How many sensors the average is over.
    public var sensors: Int

    public init(mode: HeaterMode, averageCelsius: Double, sensors: Int) {
        self.mode = mode
        self.averageCelsius = averageCelsius
        self.sensors = sensors
    }
}

/// A navigation request for the panel, at `climate/panel/requests/<id>`: the request channel.
///
/// Any process publishes one (`syncctl put climate/panel/requests/r1
/// '{"command":"push","screen":"sensor/kitchen"}'`); the panel applies each exactly once, in the
/// order they were created, and deletes it in the same transaction that saves its screen.
public struct PanelRequest: Codable, Equatable, Sendable {
    public enum Command: String, Codable, Equatable, Sendable {
        /// Show `screen` on top of the stack.
        case push
        /// Go back one screen (never below the overview).
        case pop
        /// Go back to the overview.
        case root
    }

    public var command: Command
    /// The screen to push, such as `sensor/kitchen` or `alert/too hot`.
    public var screen: String?

    public init(command: Command, screen: String? = nil) {
        self.command = command
        self.screen = screen
    }
}

/// The panel's navigation stack and how many requests it has applied, at `climate/panel/screen`.
public struct PanelScreen: Codable, Equatable, Sendable {
    /// The screens, the overview first.
    public var path: [String]
    /// How many requests have been applied since the panel's screen was created.
    public var applied: Int

    public init(path: [String] = ["overview"], applied: Int = 0) {
        self.path = path
        self.applied = applied
    }

    /// The screen after `request`.
    public func applying(_ request: PanelRequest) -> PanelScreen {
        var next = self
        next.applied += 1
        switch request.command {
        case .push:
            if let screen = request.screen { next.path.append(screen) }
        case .pop:
            if next.path.count > 1 { next.path.removeLast() }
        case .root:
            next.path = Array(next.path.prefix(1))
        }
        return next
    }
}

extension SharedKey where Value == Reading? {
    /// The latest reading of sensor `name`.
    public static func reading(of name: String) -> Self { SharedKey("climate/sensors/\(name)", default: nil) }
}

extension SharedKey where Value == Double {
    /// The temperature the thermostat aims for; 21 °C until someone sets it.
    public static let target = SharedKey("climate/target", default: 21)
}

extension SharedKey where Value == HeaterDecision? {
    /// The thermostat's latest decision.
    public static let heater = SharedKey("climate/heater", default: nil)
}

extension SharedKey where Value == PanelScreen {
    /// The panel's saved navigation stack.
    public static let panelScreen = SharedKey("climate/panel/screen", default: PanelScreen())
}

extension SharedKey where Value == Bool {
    /// Whether the feature process `name` is running: an ephemeral key, gone when it stops.
    public static func online(_ name: String) -> Self { SharedKey("climate/online/\(name)", default: false) }
}

/// The prefixes and keys the climate features share.
public enum ClimateKeys {
    /// Every sensor's reading is under this prefix.
    public static let sensors = "climate/sensors/"
    /// The panel's request channel.
    public static let panelRequests = "climate/panel/requests/"
}
