import Logging
import ServiceLifecycle

/// Checkpoints the write-ahead log every `interval`, off the commit path; see
/// ``Storage/checkpoint()``. Stops first at shutdown; the storage's close does the final one.
package struct CheckpointService: Service {
    package let storage: Storage
    package let interval: Duration
    package let logger: Logger

    package init(storage: Storage, interval: Duration, logger: Logger) {
        self.storage = storage
        self.interval = interval
        self.logger = logger
    }

    package func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await Task.sleep(for: interval)
                    try await storage.checkpoint()
                } catch is CancellationError {
                    return
                } catch  where Task.isCancelled {
                    // Stopped mid-checkpoint: GRDB interrupts SQLite, which answers
                    // SQLITE_INTERRUPT. Nothing failed; the storage's close checkpoints.
                    return
                } catch {
                    // The next round tries again; the log only grows meanwhile.
                    logger.warning("checkpoint failed", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}
