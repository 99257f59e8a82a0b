import Synchronization

/// The tasks one ``Store/send(_:)`` started, and those started in turn by the actions they sent:
/// what a ``StoreTask`` awaits and cancels.
final class EffectGroup: Sendable {
    private struct State {
        var tasks: [Task<Void, Never>] = []
        var isCancelled = false
    }

    private let state = Mutex(State())

    /// Adds `task`; cancels it at once if the group was cancelled.
    func add(_ task: Task<Void, Never>) {
        let isCancelled = state.withLock { state in
            state.tasks.append(task)
            return state.isCancelled
        }
        if isCancelled { task.cancel() }
    }

    /// The task at `index`, or nil when the group has no more tasks.
    func task(at index: Int) -> Task<Void, Never>? {
        state.withLock { $0.tasks.indices.contains(index) ? $0.tasks[index] : nil }
    }

    /// Cancels every task, and those added later.
    func cancel() {
        let tasks = state.withLock { state in
            state.isCancelled = true
            return state.tasks
        }
        for task in tasks { task.cancel() }
    }

    /// Whether ``cancel()`` was called, or every task was cancelled.
    var isCancelled: Bool {
        state.withLock { $0.isCancelled || $0.tasks.allSatisfy(\.isCancelled) }
    }

    /// Returns when every task has finished, including those added while waiting.
    func finish() async {
        var index = 0
        while let task = task(at: index) {
            await task.value
            index += 1
        }
    }
}
