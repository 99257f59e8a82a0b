/// The effects one ``Store/send(_:)`` started, and the effects of the actions they send back:
/// await them, or cancel them.
///
/// ```swift
/// await store.send(.refresh).finish()   // returns when the refresh and what followed are done
/// ```
public struct StoreTask: Hashable, Sendable {
    let group: EffectGroup?

    /// Cancels the effects, and the effects of the actions they sent.
    public func cancel() {
        group?.cancel()
    }

    /// Returns when every effect has finished, including those started by actions the effects
    /// sent; cancels them if the waiting task is cancelled.
    public func finish() async {
        guard let group else { return }
        await withTaskCancellationHandler {
            await group.finish()
        } onCancel: {
            group.cancel()
        }
    }

    /// Whether the effects were cancelled (true when there were none).
    public var isCancelled: Bool { group?.isCancelled ?? true }

    /// Whether both stand for the same send's effects.
    public static func == (lhs: StoreTask, rhs: StoreTask) -> Bool {
        lhs.group === rhs.group
    }

    /// Hashes the identity of the send's effects.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(group.map(ObjectIdentifier.init))
    }
}
