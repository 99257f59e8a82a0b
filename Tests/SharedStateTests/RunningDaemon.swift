import Foundation
import Logging
import SharedState
import SyncDaemon
import SyncEngine
import SyncSQLite
import SyncServer
import Testing

/// Runs syncd in this process, on a fresh socket and database, for the duration of `body`.
func withDaemon(_ body: (_ socketPath: String) async throws -> Void) async throws {
    let directory = "/tmp/ss-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let configuration = DaemonConfiguration(socketPath: directory + "/syncd.sock", databasePath: directory + "/state.sqlite")
    var logger = Logger(label: "syncd-test")
    logger.logLevel = .warning
    let daemon = Daemon(
        configuration: configuration,
        settings: RuntimeSettings(logLevel: .warning, limits: .default),
        logger: logger,
        environment: [:]
    )

    // Before the daemon opens its database: SQLite takes its error log only before its first use.
    SQLiteErrorLog.install()
    let misuseReportsBefore = SQLiteErrorLog.misuseReports
    defer {
        let misuses = SQLiteErrorLog.misuseReports - misuseReportsBefore
        #expect(misuses == 0, "SQLite reported \(misuses) API misuses (SQLITE_MISUSE) meanwhile; its log says where")
    }
    try await withThrowingTaskGroup(of: Void.self) { group in
        let (ready, readiness) = AsyncStream.makeStream(of: Void.self)
        group.addTask {
            do {
                try await daemon.run(onReady: { _ in readiness.yield() })
            } catch is CancellationError {
                // How the test ends it.
            }
        }
        for await _ in ready { break }
        do {
            try await body(configuration.socketPath)
        } catch {
            group.cancelAll()
            throw error
        }
        group.cancelAll()
        try await group.waitForAll()
    }
}

func connect(_ socketPath: String, name: String = "test") async throws -> SharedStateClient {
    try await SharedStateClient.connect(.init(socketPath: socketPath, clientName: name))
}

/// Collects the first `count` batches of a watch (of those `included` keeps), failing after
/// `timeout`.
///
/// By default it leaves out progress notices: syncd sends one to a watch that was sent nothing
/// for a round of its progress interval, so on a loaded machine one may come between any two
/// changes.
func firstBatches(
    _ count: Int,
    of stream: WatchStream,
    where included: @escaping @Sendable (WatchBatch) -> Bool = { $0.kind != .progress },
    timeout: Duration = .seconds(10)
) async throws -> [WatchBatch] {
    try await withThrowingTaskGroup(of: [WatchBatch].self) { group in
        group.addTask {
            var batches: [WatchBatch] = []
            for try await batch in stream where included(batch) {
                batches.append(batch)
                if batches.count == count { break }
            }
            return batches
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw SharedStateError(.unavailable, "timed out waiting for \(count) watch batches")
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}
