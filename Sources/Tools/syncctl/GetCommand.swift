import ArgumentParser
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

    func run() async throws {
        let client = try await options.connect()
        let entry = try await CommandFailure.exitOnError { try await client.get(key, consistent: consistent) }
        if options.json {
            print(JSONObject.entry(entry).rendered)
        } else {
            print(String(decoding: entry.value, as: UTF8.self))
        }
    }
}
