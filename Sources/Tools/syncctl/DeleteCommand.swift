import ArgumentParser
import SyncClient

struct DeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Remove a key."
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The key to remove.")
    var key: String

    @Option(help: "Remove only if the key is at this version.")
    var ifVersion: UInt64?

    @Option(help: "Why, in a few words: kept with the revision, shown by history and watch (at most 256 bytes).")
    var cause: String?

    func run() async throws {
        let client = try await options.connect()
        let revision = try await CommandFailure.exitOnError { try await client.delete(key, ifVersion: ifVersion, cause: cause ?? "") }
        if options.json {
            print(JSONObject().number("revision", revision).rendered)
        } else {
            print("OK revision \(revision)")
        }
    }
}
