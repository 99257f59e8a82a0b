import ServiceLifecycle

extension StateEngine: Service {
    /// Commits writes (see ``runWrites()``), and every `progressInterval` sends progress notices and applies the
    /// retention policy. On graceful shutdown it stops taking writes and returns once the queued
    /// ones are committed.
    package func run() async throws {
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.runWrites() }
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: self.progressInterval)
                        self.sendProgressNotices()
                        await self.applyRetention()
                    }
                }
                await group.next()  // the writes ended
                group.cancelAll()
            }
        } onGracefulShutdown: {
            self.shutDown()
        }
    }
}
