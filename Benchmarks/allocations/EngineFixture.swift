import Foundation
import Logging
import SharedStateWire
import SyncEngine
import SyncSQLite
import SyncServer

/// An engine over a SQLite database in a directory of its own, with its writer running and
/// delivering as syncd does (``ConnectionDelivery``): what a connection's writes go through.
final class EngineFixture: Sendable {
    let engine: StateEngine
    private let directory: String
    private let storage: Storage
    private let writer: Task<Void, Never>

    init() async throws {
        directory = "/tmp/sharedstate-allocations-\(UUID().uuidString.prefix(8))"
        let logger = Logger(label: "allocations") { _ in SwiftLogNoOpLogHandler() }
        storage = try Storage(path: directory + "/state.sqlite", durability: .normal)
        let backend = SQLiteBackend(storage: storage, logger: logger)
        let engine = StateEngine(
            backend: backend, state: try backend.load(), configuration: .init(), delivery: ConnectionDelivery(), logger: logger)
        self.engine = engine
        writer = Task { await engine.runWrites() }
        // The writer runs once it answered.
        await withCheckedContinuation { (answered: CheckedContinuation<Void, Never>) in
            engine.submit(.probe) { _ in answered.resume() }
        }
    }

    /// Submits `writes` as a connection does with the writes of one turn, and waits until
    /// `receiver` has `answered` answers in all.
    func submit(_ writes: [PendingWrite], answeredBy receiver: CountingReceiver, upTo answered: Int) {
        engine.submit(writes, mayCommitHere: true)
        receiver.wait(untilAnswered: answered)
    }

    func tearDown() async throws {
        engine.shutDown()
        await writer.value
        try storage.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
