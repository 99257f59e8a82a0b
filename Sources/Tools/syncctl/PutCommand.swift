import ArgumentParser
import Foundation
import SyncClient

struct PutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put",
        abstract: "Set a key to a JSON value.",
        discussion: "Examples: syncctl put counter/value 42; echo '{\"on\":true}' | syncctl put lamp/state -"
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The key, such as counter/value.")
    var key: String

    @Argument(help: "The value: one JSON document, or - to read it from standard input.")
    var value: String

    @Option(help: "Write only if the key is at this version; 0 means only if it does not exist.")
    var ifVersion: UInt64?

    @Option(help: "Why, in a few words: kept with the revision, shown by history and watch (at most 256 bytes).")
    var cause: String?

    @Flag(help: "Bind the key to this syncctl's connection: syncd deletes it when syncctl exits.")
    var ephemeral = false

    @Flag(
        help: """
            Stay connected after the put until interrupted (with --ephemeral: presence). If syncd \
            restarts, reconnect and put the ephemeral key back, unless another process wrote it.
            """
    )
    var hold = false

    func run() async throws {
        let bytes: Data
        if value == "-" {
            // A trailing newline from `echo` or a file is not part of the value.
            let input = FileHandle.standardInput.readDataToEndOfFile()
            let whitespace: Set<UInt8> = [0x20, 0x0A, 0x0D, 0x09]
            bytes = Data(input.reversed().drop(while: whitespace.contains).reversed().drop(while: whitespace.contains))
        } else {
            bytes = Data(value.utf8)
        }
        // Holding presence reconnects after a restart of syncd; the client puts the key back.
        let client = try await options.connect(reconnects: hold)
        let result = try await CommandFailure.exitOnError {
            try await client.put(key, value: bytes, ifVersion: ifVersion, ephemeral: ephemeral, cause: cause ?? "")
        }
        if options.json {
            print(JSONObject().number("revision", result.revision).number("version", result.version).rendered)
        } else {
            print("OK revision \(result.revision), version \(result.version)")
        }
        if hold {
            fflush(nil)  // nil flushes every stream, stdout included
            await client.waitUntilClosed()
        }
    }
}
