/// What an effect sends actions back to the store with: `await send(.loaded(value))`.
///
/// Sending runs the reducer on the main actor, one action at a time. Once the effect's task is
/// cancelled, actions it sends are ignored, so a cancelled subscription cannot change the state.
@MainActor
public struct Send<Action: Sendable>: Sendable {
    private let send: @MainActor @Sendable (Action) -> Void

    /// Creates a `Send` that hands actions to `send` (for tests and custom runtimes).
    public nonisolated init(_ send: @escaping @MainActor @Sendable (Action) -> Void) {
        self.send = send
    }

    /// Sends `action` to the store, unless the effect was cancelled.
    public func callAsFunction(_ action: Action) {
        guard !Task.isCancelled else { return }
        send(action)
    }

    nonisolated func map<T: Sendable>(_ transform: @escaping @Sendable (T) -> Action) -> Send<T> {
        let send = self.send
        return Send<T> { action in send(transform(action)) }
    }
}
