import ArgumentParser
import SyncClient

struct SchemaDeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Remove the schema of a prefix; values are left as they are.",
        discussion: """
            Refused (exit code 6) when a shorter prefix's schema, which then governs the keys, is \
            broken by values under this prefix. Exit code 2 when the prefix has no schema.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The prefix, such as climate/.")
    var prefix: String

    func run() async throws {
        let client = try await options.connect()
        let revision = try await CommandFailure.exitOnError { try await client.deleteSchema(prefix) }
        if options.json {
            print(JSONObject().string("prefix", prefix).number("revision", revision).rendered)
        } else {
            print("OK revision \(revision)")
        }
    }
}
