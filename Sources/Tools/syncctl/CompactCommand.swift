import ArgumentParser
import SyncClient

struct CompactCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compact",
        abstract: "Remove old changes from the change log (values are kept).",
        discussion: """
            Watches can no longer resume from a compacted revision: they get a 'compacted' error and \
            start again from a snapshot. syncd also compacts by itself (syncd --retain-revisions).
            """
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: "Remove every change up to and including this revision.")
    var revision: UInt64?

    @Option(help: "Keep only the last N revisions.")
    var keep: UInt64?

    func validate() throws {
        if (revision == nil) == (keep == nil) {
            throw ValidationError("give exactly one of --revision and --keep")
        }
    }

    func run() async throws {
        let client = try await options.connect()
        let compacted = try await CommandFailure.exitOnError { () async throws -> UInt64 in
            let target: UInt64
            if let revision {
                target = revision
            } else {
                let current = try await client.status().revision
                target = current > keep! ? current - keep! : 0
            }
            return try await client.compact(through: target)
        }
        if options.json {
            print(JSONObject().number("compactedRevision", compacted).rendered)
        } else {
            print("OK compacted through revision \(compacted)")
        }
    }
}
