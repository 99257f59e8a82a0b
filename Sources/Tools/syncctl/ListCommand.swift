import ArgumentParser
import SyncClient

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the keys under a prefix with their values, in key order.",
        discussion: "A prefix matches leading bytes: 'session/' lists the session segment; 'session' also lists 'sessions/x'."
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "Only keys starting with this; all keys when omitted.")
    var prefix: String = ""

    @Option(help: "At most this many entries.")
    var limit: Int?

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
    }

    func run() async throws {
        let client = try await options.connect()
        let result = try await CommandFailure.exitOnError { try await client.list(prefix: prefix, limit: limit) }
        if options.json {
            print("[" + result.entries.map { JSONObject.entry($0).rendered }.joined(separator: ",") + "]")
        } else {
            for entry in result.entries {
                print("\(entry.key)\t\(String(decoding: entry.value, as: UTF8.self))")
            }
        }
    }
}
