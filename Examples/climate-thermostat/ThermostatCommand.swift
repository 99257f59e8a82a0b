import ArgumentParser
import ClimateFeatures
import SharedState

@main
struct ThermostatCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "climate-thermostat",
        abstract: "Turns the sensors' readings into a heater decision at climate/heater.",
        discussion: "The target temperature is climate/target (21 °C until set): syncctl put climate/target 23"
    )

    @OptionGroup var options: ProcessOptions

    @Option(help: "Hysteresis around the target, in °C.")
    var band: Double = 0.5

    @Option(help: "Ask the panel to show an alert when the average rises above this, in °C.")
    var alertAbove: Double = 30

    func validate() throws {
        guard band >= 0 else { throw ValidationError("--band must not be negative, not \(band)") }
    }

    func run() async throws {
        try await Self.runThermostat(
            host: options.host(name: "thermostat"), state: Thermostat.State(band: band, alertAboveCelsius: alertAbove))
    }

    @MainActor
    private static func runThermostat(host: FeatureHost, state: Thermostat.State) async throws {
        try await host.run(
            initialState: state,
            reducer: { Thermostat() },
            start: .start
        )
    }
}
