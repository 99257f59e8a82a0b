/// Runs `operation` so that `.cancel(id:)` and `Task.cancel(id:)` can cancel it, from inside an
/// effect: a part of the effect's work made cancellable on its own.
///
/// ```swift
/// return .run { send in
///     try await withTaskCancellation(id: CancelID.search, cancelInFlight: true) {
///         try await clock.sleep(for: .milliseconds(300))   // a debounce
///         await send(.searchResponse(try await client.search(query)))
///     }
/// }
/// ```
///
/// The id belongs to the store the effect runs in, at the effect's place in the feature tree,
/// like ids given to ``Effect/cancellable(id:cancelInFlight:)``. Called outside an effect, it
/// runs `operation` with nothing to cancel it by id.
///
/// - Parameters:
///   - id: The cancellation id.
///   - cancelInFlight: Cancels the work already running under `id` first.
///   - operation: The work.
/// - Throws: What `operation` throws; `CancellationError` when it was cancelled by id and
///   checked for cancellation.
public func withTaskCancellation<T: Sendable>(
    id: some Hashable & Sendable,
    cancelInFlight: Bool = false,
    operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    guard let context = EffectContext.current else { return try await operation() }
    // A task of its own, so that a cancel by id reaches this work alone and not the effect that
    // awaits it; the effect owns it: it awaits it below and cancels it when it is cancelled.
    let task = Task(operation: operation)
    let key = context.effects.register(
        id: EffectID(id, path: context.path),
        cancelInFlight: cancelInFlight,
        cancel: { task.cancel() }
    )
    defer { context.effects.remove(key) }
    return try await withTaskCancellationHandler {
        try await task.value
    } onCancel: {
        task.cancel()
    }
}

extension Task where Success == Never, Failure == Never {
    /// Cancels the effects of the current store under `id`, from inside an effect, as
    /// ``Effect/cancel(id:)`` does from a reducer.
    ///
    /// Called outside an effect, it does nothing.
    public static func cancel(id: some Hashable & Sendable) {
        guard let context = EffectContext.current else { return }
        context.effects.cancel(id: EffectID(id, path: context.path))
    }
}
