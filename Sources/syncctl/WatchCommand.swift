import ArgumentParser
import Foundation
import SharedState

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print every change under the prefixes as it happens, one line per change.",
        discussion: """
            Without --from-revision the watch starts at the current revision; with it, every change \
            after that revision is replayed first. If syncd restarts, the watch reconnects and resumes \
            after the last revision it printed.
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

    func validate() throws {
        if snapshot && fromRevision != nil {
            throw ValidationError("--snapshot and --from-revision cannot be combined")
        }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
    }

    func run() async throws {
        var start: WatchStart = fromRevision.map(WatchStart.after) ?? (snapshot ? .snapshot : .now)
        var lastRevision: UInt64?
        var printed = 0
        // What this watch has printed so far, so a resync or a re-snapshot prints only the difference.
        var mirror = MirroredState()
        var isFirstConnection = true
        var retryDelay = Duration.milliseconds(100)

        while true {
            let client: SharedStateClient
            if isFirstConnection {
                client = try await options.connect()
                isFirstConnection = false
            } else {
                do {
                    client = try await SharedStateClient.connect(.init(socketPath: options.socket, clientName: "syncctl"))
                } catch {
                    try await Task.sleep(for: retryDelay)
                    retryDelay = min(retryDelay * 2, .seconds(2))
                    continue
                }
                FileHandle.standardError.write(Data("syncctl: reconnected to \(client.socketPath)\n".utf8))
                retryDelay = .milliseconds(100)
            }
            let resumeFrom = lastRevision ?? client.revisionAtConnect
            do {
                for try await batch in client.watch(prefixes: prefixes.isEmpty ? [""] : prefixes, start: start) {
                    lastRevision = batch.revision
                    let isInitialSnapshot = batch.kind == .snapshot && start == .snapshot && mirror.revision == 0
                    for change in mirror.apply(batch) {
                        print(line(for: change))
                        if !isInitialSnapshot { printed += 1 }
                        if let count, printed >= count {
                            fflush(nil)  // nil flushes every stream, stdout included
                            return
                        }
                    }
                    fflush(nil)  // nil flushes every stream, stdout included
                }
            } catch let error as SharedStateError where error.code == .unavailable {
                FileHandle.standardError.write(Data("syncctl: \(error.message); reconnecting\n".utf8))
            } catch let error as SharedStateError where error.code == .compacted && lastRevision != nil {
                // The changes since the last printed revision are gone: start again from a
                // snapshot, and print only what differs from what was printed.
                FileHandle.standardError.write(Data("syncctl: \(error.message); continuing from a snapshot\n".utf8))
                start = .snapshot
                continue
            } catch let error as SharedStateError {
                CommandFailure.fail(error.message, code: CommandFailure.exitCode(for: error))
            }
            start = .after(lastRevision ?? resumeFrom)
        }
    }

    private func line(for change: Change) -> String {
        let revision = change.revision
        if options.json {
            var object = JSONObject()
                .number("revision", revision)
                .string("type", change.type.rawValue)
                .string("key", change.key)
            if change.type == .put {
                object = object.raw("value", change.entry.value).number("version", change.entry.version)
            } else {
                object = object.number("version", 0)
            }
            return object.rendered
        }
        switch change.type {
        case .put: return "\(revision) put \(change.key) \(String(decoding: change.entry.value, as: UTF8.self))"
        case .delete: return "\(revision) delete \(change.key)"
        }
    }
}
