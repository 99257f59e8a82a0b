import ArgumentParser
import Foundation
import SyncClient

struct ExistsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exists",
        abstract: "Say which keys exist, with their versions, without reading their values.",
        discussion: """
            Looks the keys up together, at one revision. Prints each key with its version, or \
            'absent', one per line; with --json {"revision":R,"versions":{"KEY":VERSION or null}}. \
            Exits 0 when every key exists and 2 when one does not, so 'syncctl exists KEY && ...' \
            reads as a test.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The keys to look for.")
    var keys: [String]

    func run() async throws {
        let client = try await options.connect()
        let result = try await CommandFailure.exitOnError { try await client.exists(keys) }
        if options.json {
            var versions = JSONObject()
            for key in keys {
                versions = versions.raw(key, Data((result.versions[key].map(String.init) ?? "null").utf8))
            }
            print(JSONObject().number("revision", result.revision).raw("versions", Data(versions.rendered.utf8)).rendered)
        } else {
            for key in keys { print("\(key)\t\(result.versions[key].map(String.init) ?? "absent")") }
        }
        if keys.contains(where: { !result.contains($0) }) { throw ExitCode(2) }
    }
}
