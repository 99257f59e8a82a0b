import ArgumentParser
import ClimateFeatures
import SharedState

@main
struct PanelCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "climate-panel",
        abstract: "Shows the heater and a navigation stack driven by requests under climate/panel/requests/.",
        discussion: """
            Publish a request from anywhere:
              syncctl put climate/panel/requests/r1 '{"command":"push","screen":"sensor/kitchen"}'
            Commands: push (with a screen), pop, root.
            """
    )

    @OptionGroup var options: ProcessOptions

    func run() {
        options.host(name: "panel").main(
            initialState: Panel.State(),
            reducer: { Panel() },
            start: .start
        )
    }
}
