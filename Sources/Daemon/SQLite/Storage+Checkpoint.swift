import GRDB
import Synchronization

/// Keeping the write-ahead log small without holding up commits.
package extension Storage {
    /// Copies committed pages from the write-ahead log into the database file without waiting for
    /// the writer or readers, on a connection of its own, so commits go on meanwhile. Once the log
    /// holds `restartFrames` pages that are all copied, restarts it from its beginning on the
    /// writer's connection (quick: nothing is left to copy), which is what keeps it small.
    /// Returns false when the database was busy and nothing was done.
    ///
    /// - Throws: ``StorageError`` once the database is closed.
    @discardableResult
    func checkpoint(restartFrames: Int = 8192) async throws -> Bool {
        let checkpointer = try checkpointConnection()
        let result = try await checkpointer.writeWithoutTransaction { db -> (walFrameCount: Int, checkpointedFrameCount: Int)? in
            // Closed by ``close()`` since it was handed out.
            try self.requireOpen(db)
            do {
                return try db.checkpoint(.passive)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
                return nil
            }
        }
        guard let result else { return false }
        guard result.walFrameCount >= restartFrames, result.checkpointedFrameCount == result.walFrameCount else { return true }
        return try await withWriter { db in
            do {
                _ = try db.checkpoint(.restart)
                return true
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
                return false
            }
        }
    }

    private func checkpointConnection() throws -> DatabaseQueue {
        try checkpointer.withLock { checkpointer in
            switch checkpointer {
            case .open(let queue):
                return queue
            case .closed:
                throw closedError
            case .notOpened:
                var configuration = Configuration()
                configuration.label = "syncd-checkpoint"
                configuration.busyMode = .immediateError
                let queue = try DatabaseQueue(path: path, configuration: configuration)
                checkpointer = .open(queue)
                return queue
            }
        }
    }
}
