import ArgumentParser
import Foundation
import SyncClient

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the backend, revision, keys, clients, watches, compacted revision, database size and uptime.",
        discussion: """
            With the etcd backend, it also shows the etcd endpoint in use, the newest revision etcd \
            reported, whether this syncd has applied it (caught up), and since when it has been unable \
            to reach etcd, if it is (stale: reads then serve the last state it applied).
            """
    )

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let client = try await options.connect()
        let status = try await CommandFailure.exitOnError { try await client.status() }
        let isEtcd = status.backend == "etcd"
        let staleSince = status.staleSince
        if options.json {
            var object = JSONObject()
                .string("backend", status.backend.isEmpty ? "sqlite" : status.backend)
            if isEtcd {
                object =
                    object
                    .string("etcdEndpoint", status.databasePath)
                    .number("etcdRevision", status.backendRevision)
                    .bool("caughtUp", status.revision >= status.backendRevision && staleSince == nil)
                if let staleSince { object = object.number("staleSince", staleSince.timeIntervalSince1970) }
            }
            if let durability = status.durability {
                object =
                    object
                    .string("durability", durability.mode)
                    .number("syncIntervalSeconds", durability.syncIntervalSeconds)
                    .number("unsyncedSeconds", durability.unsyncedSeconds)
                    .number("unsyncedBytes", durability.unsyncedBytes)
                    .number("longestUnsyncedSeconds", durability.longestUnsyncedSeconds)
                    .number("unmovedBytes", durability.unmovedBytes)
            }
            print(
                object
                    .number("revision", status.revision)
                    .number("keys", status.keys)
                    .number("clients", status.clients)
                    .number("watches", status.watches)
                    .number("compactedRevision", status.compactedRevision)
                    .number("databaseBytes", status.databaseBytes)
                    .number("uptimeSeconds", status.uptimeSeconds)
                    .string("version", status.serverVersion)
                    .string(isEtcd ? "etcd" : "database", status.databasePath)
                    .string("socket", client.socketPath)
                    .rendered
            )
        } else {
            let backend: String
            if isEtcd {
                let state =
                    if let staleSince {
                        "stale since \(staleSince.formatted(.iso8601)) (\(Int(Date().timeIntervalSince(staleSince))) s): etcd is unreachable"
                    } else if status.revision >= status.backendRevision {
                        "caught up"
                    } else {
                        "catching up (etcd is at \(status.backendRevision))"
                    }
                backend = """
                    backend:            etcd, endpoint \(status.databasePath)
                    etcd revision:      \(status.backendRevision), \(state)
                    """
            } else {
                // syncd shows where its database is to administrators only.
                let path = status.databasePath.isEmpty ? "(its path is shown to administrators)" : status.databasePath
                backend = "database:           \(path) (\(status.databaseBytes) bytes)"
            }
            let durability = status.durability.map { durability in
                let unsynced =
                    durability.unsyncedBytes == 0
                    ? "everything acknowledged is on disk"
                    : "\(durability.unsyncedBytes) bytes unsynced for \(Self.seconds(durability.unsyncedSeconds))"
                let promise =
                    durability.mode == "full"
                    ? "full (each write on disk before it is acknowledged)"
                    : "normal (a power cut loses at most the last \(Self.seconds(durability.syncIntervalSeconds)))"
                return """

                    durability:         \(promise); \(unsynced); longest unsynced \(Self.seconds(durability.longestUnsyncedSeconds)); \
                    \(durability.unmovedBytes) bytes of the journal not yet in SQLite
                    """
            }
            print(
                """
                socket:             \(client.socketPath)
                \(backend)\(durability ?? "")
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

    /// Seconds for a person: `0.25 s`.
    private static func seconds(_ value: Double) -> String {
        "\((value * 1000).rounded() / 1000) s"
    }
}
