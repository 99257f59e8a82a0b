import ArgumentParser
import ClimateFeatures
import SharedState

@main
struct ThermostatCommand: ParsableCommand {
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

    func run() {
        options.host(name: "thermostat").main(
            initialState: Thermostat.State(band: band, alertAboveCelsius: alertAbove),
            reducer: { Thermostat() },
            start: .start
        )
    }
}
