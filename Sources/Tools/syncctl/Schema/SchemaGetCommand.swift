import ArgumentParser
import SyncClient

struct SchemaGetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print the schema of a prefix (exit code 2 when it has none)."
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The prefix, such as climate/.")
    var prefix: String

    func run() async throws {
        let client = try await options.connect()
        guard let schema = try await CommandFailure.exitOnError({ try await client.schema(for: prefix) }) else {
            CommandFailure.fail("the prefix \(KeyRules.quoted(prefix)) has no schema", code: 2)
        }
        if options.json {
            print(JSONObject.schema(schema).rendered)
        } else {
            print(String(decoding: schema.document, as: UTF8.self))
        }
    }
}

extension JSONObject {
    /// A schema object of `schema get --json` and `schema list --json`.
    static func schema(_ schema: PrefixSchema) -> JSONObject {
        JSONObject()
            .string("prefix", schema.prefix)
            .raw("schema", schema.document)
            .number("version", schema.version)
            .number("modRevision", schema.modRevision)
    }
}
