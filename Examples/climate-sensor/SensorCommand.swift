import ArgumentParser
import ClimateFeatures
import SharedState

@main
struct SensorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "climate-sensor",
        abstract: "Publishes a sensor's temperature readings to syncd."
    )

    @OptionGroup var options: ProcessOptions

    @Option(help: "The sensor's name; its readings go to climate/sensors/<name>.")
    var name: String

    @Option(help: "The temperature the readings move around, in °C.")
    var baseCelsius: Double = 20

    @Option(help: "Milliseconds between readings.")
    var intervalMs: Int = 1000

    @Option(help: "Stop after this many readings (default: run until SIGTERM).")
    var readings: Int?

    func validate() throws {
        guard (try? KeyRules.validateKey("climate/sensors/\(name)")) != nil, !name.contains("/") else {
            throw ValidationError("--name must be one key segment (letters, digits, '-', '_'), not \"\(name)\"")
        }
        guard intervalMs >= 1 else { throw ValidationError("--interval-ms must be at least 1, not \(intervalMs)") }
        if let readings, readings < 0 { throw ValidationError("--readings must not be negative, not \(readings)") }
    }

    func run() {
        let state = Sensor.State(
            name: name,
            baseCelsius: baseCelsius,
            interval: .milliseconds(intervalMs),
            readings: readings
        )
        options.host(name: "sensor-\(name)").main(
            initialState: state,
            reducer: { Sensor() },
            start: .start,
            stop: .stop,
            exitWhenIdle: readings != nil
        )
    }
}
