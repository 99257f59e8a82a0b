import ArgumentParser
import SyncClient

struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Write a consistent copy of syncd's database to a file, while syncd keeps serving."
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The file to write (an SQLite database); replaced if it exists.")
    var file: String

    func run() async throws {
        let client = try await options.connect()
        let result = try await CommandFailure.exitOnError { try await client.backup(to: file) }
        if options.json {
            print(JSONObject().number("revision", result.revision).number("bytes", result.bytes).rendered)
        } else {
            print("OK backup of revision \(result.revision) in \(file) (\(result.bytes) bytes)")
        }
    }
}
