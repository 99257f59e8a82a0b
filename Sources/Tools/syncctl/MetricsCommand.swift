import ArgumentParser
import SyncClient

struct MetricsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "metrics",
        abstract: "Print syncd's metrics in Prometheus's text format (syncd's own user and root only).",
        discussion: "The same text syncd serves at /metrics when started with --metrics-address."
    )

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let client = try await options.connect()
        let text = try await CommandFailure.exitOnError { try await client.metrics() }
        print(text, terminator: "")
    }
}
