import ArgumentParser
import Foundation
import SyncClient

struct SchemaSetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Set the schema of a prefix, refused if values already written under it break it.",
        discussion: """
            Example: syncctl schema set climate/ climate.schema.json. The schema is a JSON Schema \
            document using type, properties, required, additionalProperties, items, prefixItems, \
            enum, const, minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf, \
            minLength, maxLength, pattern, minItems, maxItems, uniqueItems, minProperties, \
            maxProperties, default, description, title and $comment; any other keyword is refused.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The prefix it governs, such as climate/.")
    var prefix: String

    @Argument(help: "A file holding the schema, or - to read it from standard input.")
    var file: String

    @Flag(help: "Only check it: that syncd can use it and that no value this process can read breaks it. Sets nothing.")
    var check = false

    @Option(help: "Set it only if the schema is at this version; 0 means only if the prefix has none.")
    var ifVersion: UInt64?

    func run() async throws {
        let document = try readDocument()
        let client = try await options.connect()
        if check {
            try await CommandFailure.exitOnError { try await client.checkSchema(prefix, document: document) }
            if options.json {
                print(JSONObject().string("prefix", prefix).bool("valid", true).rendered)
            } else {
                print(
                    "OK: the schema is usable and no value this process can read under \(KeyRules.quoted(prefix)) breaks it; nothing was set"
                )
            }
            return
        }
        let result = try await CommandFailure.exitOnError { try await client.setSchema(prefix, document: document, ifVersion: ifVersion) }
        if options.json {
            print(JSONObject().string("prefix", prefix).number("revision", result.revision).number("version", result.version).rendered)
        } else {
            print("OK revision \(result.revision), version \(result.version)")
        }
    }

    private func readDocument() throws -> Data {
        if file == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
        do {
            return try Data(contentsOf: URL(fileURLWithPath: file))
        } catch {
            CommandFailure.fail("cannot read the schema file \(KeyRules.quoted(file)): \(error.localizedDescription)", code: 1)
        }
    }
}
