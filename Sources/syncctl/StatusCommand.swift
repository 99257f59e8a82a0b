import ArgumentParser
import SyncClient

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the revision, keys, clients, watches, compacted revision, database size and uptime."
    )

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let client = try await options.connect()
        let status = try await CommandFailure.exitOnError { try await client.status() }
        if options.json {
            print(
                JSONObject()
                    .number("revision", status.revision)
                    .number("keys", status.keys)
                    .number("clients", status.clients)
                    .number("watches", status.watches)
                    .number("compactedRevision", status.compactedRevision)
                    .number("databaseBytes", status.databaseBytes)
                    .number("uptimeSeconds", status.uptimeSeconds)
                    .string("version", status.serverVersion)
                    .string("database", status.databasePath)
                    .string("socket", client.socketPath)
                    .rendered
            )
        } else {
            print(
                """
                socket:             \(client.socketPath)
                database:           \(status.databasePath) (\(status.databaseBytes) bytes)
                revision:           \(status.revision)
                compacted revision: \(status.compactedRevision)
                keys:               \(status.keys)
                clients:            \(status.clients)
                watches:            \(status.watches)
                uptime:             \(Int(status.uptimeSeconds)) s
                version:            \(status.serverVersion)
                """
            )
        }
    }
}
