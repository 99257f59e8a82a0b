import Synchronization

/// The requests that wait (backup, compaction, replays, restores, file transfers), as tasks the
/// server owns: at shutdown it cancels what is left and waits for it, so no request outlives the
/// engine and the database it works on.
package final class RequestTasks: Sendable {
    private struct State {
        var tasks: [UInt64: Task<Void, Never>] = [:]
        var nextKey: UInt64 = 0
        var isClosed = false
    }

    private let state = Mutex(State())

    /// How many requests are running.
    var count: Int { state.withLock { $0.tasks.count } }

    /// Runs `work` as a task of the server; false, running nothing, once the server shuts down.
    func run(_ work: @escaping @Sendable () async -> Void) -> Bool {
        state.withLock { state in
            guard !state.isClosed else { return false }
            let key = state.nextKey
            state.nextKey += 1
            // Registered before it can end: its last step waits for this lock.
            state.tasks[key] = Task { [weak self] in
                await work()
                _ = self?.state.withLock { $0.tasks.removeValue(forKey: key) }
            }
            return true
        }
    }

    /// Refuses new requests, cancels the running ones and returns once all have ended.
    func shutDown() async {
        let tasks = state.withLock { state in
            state.isClosed = true
            return Array(state.tasks.values)
        }
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
    }
}
