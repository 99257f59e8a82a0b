import ArgumentParser
import Foundation
import SyncClient

struct SchemaListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the prefixes with a schema, each with its title or description."
    )

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let client = try await options.connect()
        let schemas = try await CommandFailure.exitOnError { try await client.schemas() }
        if options.json {
            print("[" + schemas.map { JSONObject.schema($0).rendered }.joined(separator: ",") + "]")
            return
        }
        for schema in schemas {
            let summary = Self.summary(of: schema.document)
            print(summary.isEmpty ? schema.prefix : "\(schema.prefix)\t\(summary)")
        }
    }

    /// The document's title, else its description, on one line.
    private static func summary(of document: Data) -> String {
        guard case .object(let members)? = try? JSONValue(parsing: document) else { return "" }
        for name in ["title", "description"] {
            if case .string(let text)? = members[name] {
                return text.split(whereSeparator: \.isNewline).joined(separator: " ")
            }
        }
        return ""
    }
}
