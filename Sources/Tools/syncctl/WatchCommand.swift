import ArgumentParser
import Foundation
import SyncClient

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print every change under the prefixes as it happens, one line per change.",
        discussion: """
            Without --from-revision the watch starts at the current revision; with it, every change \
            after that revision is replayed first. If syncd restarts, the watch reconnects and resumes \
            after the last revision it printed. If it falls behind, or its resume point was compacted, \
            it prints the difference between what it printed and the current state.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "Key prefixes to watch; every key when omitted.")
    var prefixes: [String] = []

    @Option(help: "Replay every change after this revision, then go live.")
    var fromRevision: UInt64?

    @Flag(help: "First print every matching entry as a put at the current revision.")
    var snapshot = false

    @Option(help: "Exit after printing this many changes (snapshot entries not counted).")
    var count: Int?

    @Flag(help: "Under each change, what changed inside the value (with --json, a JSON Patch as \"patch\").")
    var diff = false

    func validate() throws {
        if snapshot && fromRevision != nil {
            throw ValidationError("--snapshot and --from-revision cannot be combined")
        }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
    }

    func run() async throws {
        let start: WatchStart = fromRevision.map(WatchStart.after) ?? (snapshot ? .snapshot : .now)
        let client = try await options.connect()
        let prefixes = self.prefixes.isEmpty ? [""] : self.prefixes
        try await withThrowingTaskGroup(of: Void.self) { group in
            // The library reconnects and resumes the watch by itself; say so on standard error.
            group.addTask {
                for await state in client.connectionStates().dropFirst() {
                    FileHandle.standardError.write(Data("syncctl: \(state) (\(client.socketPath))\n".utf8))
                }
            }
            // A diff needs each change's previous value: syncd sends it along.
            let names = ClientNames(client: client)
            group.addTask { try await printChanges(of: client.watch(prefixes: prefixes, start: start, previousValues: diff), names: names) }
            try await group.next()
            group.cancelAll()
        }
    }

    private func printChanges(of stream: WatchStream, names: ClientNames) async throws {
        var printed = 0
        do {
            for try await batch in stream {
                // The changes of one revision name their writer; a snapshot or resync, none.
                // Session 0 without a cause: a revision whose writer is not known (etcd does not keep it).
                let isKnown = batch.writerSession != 0 || !batch.cause.isEmpty
                var origin = batch.kind == .changes && isKnown ? ChangeLine.Origin(session: batch.writerSession, cause: batch.cause) : nil
                if let session = origin?.session, session != 0 { origin?.clientName = await names.name(of: session) }
                for change in batch.changes {
                    let patch = diff && batch.kind != .snapshot ? DiffLines.diff(of: change) : nil
                    print(ChangeLine.render(change, json: options.json, origin: origin, patch: patch))
                    if diff && !options.json && batch.kind != .snapshot { DiffLines.render(patch).forEach { print($0) } }
                    if batch.kind != .snapshot { printed += 1 }
                    if let count, printed >= count {
                        fflush(nil)  // nil flushes every stream, stdout included
                        return
                    }
                }
                fflush(nil)
            }
        } catch let error as SharedStateError {
            CommandFailure.fail(error.message, code: CommandFailure.exitCode(for: error))
        }
    }
}

/// The names of the clients a watch's changes come from, as `history` shows them: asked of syncd
/// (`clients`) the first time a session writes, and kept. A session gone before it is asked
/// stays unnamed, and so do all when this user may not list clients (only syncd's own user and
/// root may).
actor ClientNames {
    private let client: SharedStateClient
    private var names: [UInt64: String] = [:]
    private var asked: Set<UInt64> = []
    private var mayList = true

    init(client: SharedStateClient) {
        self.client = client
    }

    /// The client name of `session`, if syncd knows it.
    func name(of session: UInt64) async -> String? {
        if let name = names[session] { return name }
        guard mayList, asked.insert(session).inserted else { return nil }
        do {
            for info in try await client.clients() where !info.name.isEmpty { names[info.sessionID] = info.name }
        } catch {
            mayList = error.code != .permissionDenied
        }
        return names[session]
    }
}
