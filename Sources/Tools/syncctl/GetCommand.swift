import ArgumentParser
import Foundation
import SyncClient

struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print a key's JSON value (with --json: the value with its version and revisions)."
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The key, such as counter/value.")
    var key: String

    @Flag(
        help: """
            Read through to the backend: with syncd on etcd, a linearizable read that sees every write \
            any host had acknowledged (a plain get reads this host's copy, which may be a moment behind).
            """)
    var consistent = false

    @Flag(help: "Also print the schema that governs the key, if one does (with --json: a \"schema\" field, null if none).")
    var schema = false

    func run() async throws {
        let client = try await options.connect()
        let entry = try await CommandFailure.exitOnError { try await client.get(key, consistent: consistent) }
        let governing = schema ? try await CommandFailure.exitOnError { try await client.schema(governing: key) } : nil
        if options.json {
            var object = JSONObject.entry(entry)
            if schema { object = object.raw("schema", Data((governing.map { JSONObject.schema($0).rendered } ?? "null").utf8)) }
            print(object.rendered)
        } else {
            print(String(decoding: entry.value, as: UTF8.self))
            if schema {
                if let governing {
                    print(
                        "schema of \(KeyRules.quoted(governing.prefix)) (version \(governing.version)): \(JSONObject.compacted(governing.document))"
                    )
                } else {
                    print("no schema governs \(KeyRules.quoted(key))")
                }
            }
        }
    }
}
