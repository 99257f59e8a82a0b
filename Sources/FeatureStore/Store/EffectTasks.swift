import Synchronization

/// The running effect tasks of one store: what cancels them by id, all at once when the store
/// goes away, and what tells when none is left.
final class EffectTasks: Sendable {
    private struct State {
        var nextKey = 0
        var tasks: [Int: Task<Void, Never>] = [:]
        var keysByID: [EffectID: Set<Int>] = [:]
        var idsByKey: [Int: [EffectID]] = [:]
        var idleWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
        var notYetRunning = 0
        var isShutDown = false
    }

    private let state = Mutex(State())

    /// How many effect tasks are running.
    var count: Int { state.withLock { $0.tasks.count } }

    /// How many started tasks have not begun to execute yet (so a test knows when an effect has
    /// reached its first suspension, such as a clock's sleep).
    var notYetRunning: Int { state.withLock { $0.notYetRunning } }

    /// Starts `operation` as a task cancellable by every id of `ids`; nil once the store shut down.
    func start(
        priority: TaskPriority?,
        ids: [EffectID],
        operation: @escaping @Sendable () async -> Void
    ) -> Task<Void, Never>? {
        state.withLock { state -> Task<Void, Never>? in
            guard !state.isShutDown else { return nil }
            let key = state.nextKey
            state.nextKey += 1
            state.notYetRunning += 1
            let task = Task(priority: priority) { [weak self] in
                self?.state.withLock { $0.notYetRunning -= 1 }
                await operation()
                self?.finish(key)
            }
            state.tasks[key] = task
            if !ids.isEmpty {
                state.idsByKey[key] = ids
                for id in ids { state.keysByID[id, default: []].insert(key) }
            }
            return task
        }
    }

    /// Cancels the tasks started under `id`.
    func cancel(id: EffectID) {
        let tasks = state.withLock { state in
            (state.keysByID[id] ?? []).compactMap { state.tasks[$0] }
        }
        for task in tasks { task.cancel() }
    }

    /// Cancels every task, and refuses new ones.
    func shutDown() {
        let tasks = state.withLock { state in
            state.isShutDown = true
            return Array(state.tasks.values)
        }
        for task in tasks { task.cancel() }
    }

    /// Cancels every running task; new ones may still start.
    func cancelAll() {
        for task in state.withLock({ Array($0.tasks.values) }) { task.cancel() }
    }

    /// Returns once no effect task is running, or when the waiting task is cancelled.
    func waitUntilIdle() async {
        let waiter = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state in
                    if state.tasks.isEmpty || Task.isCancelled { return true }
                    state.idleWaiters[waiter] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.idleWaiters.removeValue(forKey: waiter) }?.resume()
        }
    }

    private func finish(_ key: Int) {
        let waiters = state.withLock { state -> Dictionary<Int, CheckedContinuation<Void, Never>>.Values in
            state.tasks[key] = nil
            for id in state.idsByKey.removeValue(forKey: key) ?? [] {
                state.keysByID[id]?.remove(key)
                if state.keysByID[id]?.isEmpty == true { state.keysByID[id] = nil }
            }
            guard state.tasks.isEmpty else { return [:].values }
            defer { state.idleWaiters = [:] }
            return state.idleWaiters.values
        }
        for waiter in waiters { waiter.resume() }
    }
}
