import Synchronization
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

@Suite(.timeLimit(.minutes(1))) struct RequestTasksTests {
    @Test func shutdownCancelsWhatRunsWaitsForItAndRefusesMore() async throws {
        let tasks = RequestTasks()
        let ended = Mutex<[String]>([])
        // One request that stops when cancelled, one that finishes its work anyway.
        #expect(
            tasks.run {
                do {
                    try await Task.sleep(for: .seconds(600))
                    ended.withLock { $0.append("sleeper woke") }
                } catch {
                    ended.withLock { $0.append("cancelled sleeper") }
                }
            })
        #expect(
            tasks.run {
                let deadline = ContinuousClock.now + .milliseconds(200)
                while ContinuousClock.now < deadline { await Task.yield() }
                ended.withLock { $0.append("stubborn worker") }
            })
        #expect(tasks.count == 2)
        await tasks.shutDown()
        // Both are over when shutDown returns: the sleeper cancelled, the worker done.
        #expect(Set(ended.withLock { $0 }) == ["cancelled sleeper", "stubborn worker"])
        #expect(!tasks.run { ended.withLock { $0.append("too late") } })
        #expect(tasks.count == 0)
    }
}
