/// The effects one ``Store/send(_:)`` started: await them, or cancel them.
///
/// ```swift
/// await store.send(.refresh).finish()   // returns when the refresh's effects are done
/// ```
public struct StoreTask: Hashable, Sendable {
    let tasks: [Task<Void, Never>]

    /// Cancels the effects.
    public func cancel() {
        for task in tasks { task.cancel() }
    }

    /// Returns when every effect has finished; cancels them if the waiting task is cancelled.
    public func finish() async {
        await withTaskCancellationHandler {
            for task in tasks { await task.value }
        } onCancel: {
            cancel()
        }
    }

    /// Whether the effects were cancelled (true when there were none).
    public var isCancelled: Bool { tasks.allSatisfy(\.isCancelled) }
}
