import ArgumentParser
import SyncClient

struct RestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Make syncd's keys equal to those of a backup, as one new revision.",
        discussion: """
            Keys whose value differs are written, keys the backup lacks are deleted, and watchers see \
            it all as one ordinary change. Revisions keep increasing; the backup's history is not restored.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "A file written by syncctl backup.")
    var file: String

    func run() async throws {
        let client = try await options.connect()
        let result = try await CommandFailure.exitOnError { try await client.restore(from: file) }
        if options.json {
            print(JSONObject().number("revision", result.revision).number("puts", result.puts).number("deletes", result.deletes).rendered)
        } else {
            print("OK restored at revision \(result.revision): \(result.puts) keys written, \(result.deletes) deleted")
        }
    }
}
