import ArgumentParser
import SyncClient

struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Print the changes of a key that the change log still holds, oldest first.",
        discussion: """
            One line per change, in the same form as watch, with who made it: the writing client's \
            name and session (and its pid, to syncd's own user and root) and the cause its write \
            carried. Exits 2 when the log holds none.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The key.")
    var key: String

    @Option(help: "Only the most recent N changes.")
    var limit: Int?

    @Flag(help: "Under each change, what changed inside the value (with --json, a JSON Patch as \"patch\").")
    var diff = false

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
    }

    func run() async throws {
        let client = try await options.connect()
        let history = try await CommandFailure.exitOnError { try await client.history(of: key, limit: limit) }
        if history.changes.isEmpty {
            CommandFailure.fail(
                "no changes of key \(KeyRules.quoted(key)) in the change log (compacted through revision \(history.compactedRevision))",
                code: 2
            )
        }
        // The entry before the oldest change is known only if that change created the key.
        var previous: Change.Previous = .unknown
        for (var change, origin) in zip(history.changes, history.origins) {
            change.previous = change.type == .put && change.entry.version == 1 ? .absent : previous
            let patch = diff ? DiffLines.diff(of: change) : nil
            print(ChangeLine.render(change, json: options.json, origin: ChangeLine.Origin(origin), patch: patch))
            if diff && !options.json { DiffLines.render(patch).forEach { print($0) } }
            previous = change.type == .put ? .entry(change.entry) : .absent
        }
    }
}
