import ArgumentParser
import SyncClient

struct CountCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "count",
        abstract: "Count the keys under a prefix, without reading their values.",
        discussion: """
            Like 'etcdctl get --prefix --count-only'. Counts the keys you may read; a prefix matches \
            leading bytes, as for 'list'. Prints the count, or with --json {"count":N,"revision":R}.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "Only keys starting with this; all keys when omitted.")
    var prefix: String = ""

    func run() async throws {
        let client = try await options.connect()
        let result = try await CommandFailure.exitOnError { try await client.count(prefix: prefix) }
        if options.json {
            print(JSONObject().number("count", result.count).number("revision", result.revision).rendered)
        } else {
            print(result.count)
        }
    }
}
