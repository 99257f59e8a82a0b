import ServiceLifecycle

extension StateEngine: Service {
    /// Runs the writer; on graceful shutdown it stops taking writes and returns once the queued
    /// ones are committed.
    func run() async throws {
        await withGracefulShutdownHandler {
            await runWriter()
        } onGracefulShutdown: {
            self.shutDown()
        }
    }
}
