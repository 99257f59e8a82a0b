import Dependencies
import FeatureStore
import IssueReporting
import SyncClient

extension Effect {
    /// Watches a typed key and sends an action with its value now and after every change.
    ///
    /// A value that does not decode as `Value` (schema drift) arrives as a failure, as does the
    /// end of the watch (`unavailable` once the client closes); the default arrives while the key
    /// is missing. Start it on an action and cancel it by id:
    ///
    /// ```swift
    /// case .start:
    ///     return .observe(.target) { .targetChanged($0) }.cancellable(id: CancelID.target)
    /// case .stop:
    ///     return .cancel(id: CancelID.target)
    /// ```
    ///
    /// The watch is read on the main actor, where the reducer runs. Under `MainEventLoop`
    /// (``FeatureHost/main(initialState:reducer:start:stop:exitWhenIdle:)``) the main actor runs
    /// on the thread that reads syncd's socket, and a change is sent to the store inside the read
    /// that brought it; otherwise it goes from the connection's event loop to the main actor with
    /// one thread hand-off.
    ///
    /// The effect is named by where it was made (`fileID`, `line`, ...): a test that ends with it
    /// still running points at the feature's line, not the library's.
    // Inlinable: the closure that handles each change is then specialized for the feature's
    // `Value` and `Action` in the feature's module (BENCHMARKS.md, issue 38, step 33).
    @inlinable
    public static func observe<Value>(
        _ key: SharedKey<Value>,
        _ toAction: @escaping @Sendable (Result<Value, SharedStateError>) -> Action,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) -> Self {
        .run(
            operation: { @MainActor send in
                @Dependency(\.sharedState) var sharedState
                do {
                    try await sharedState.watch(prefixes: [key.name], fromRevision: nil).handleEach { batch in
                        if let update = key.value(after: batch) { send(toAction(update)) }
                    }
                } catch {
                    send(toAction(.failure(SharedStateError(error))))
                }
            },
            fileID: fileID, filePath: filePath, line: line, column: column)
    }

    /// Watches the keys under `prefix` and sends an action with each batch of changes: a
    /// snapshot first, then the changes of each revision (see ``SharedItems``).
    ///
    /// - Parameters:
    ///   - handler: Turns the end of the watch (`unavailable` once the client closes,
    ///     `permissionDenied`) into an action; without it, that is reported as an issue.
    ///   - prefix: The prefix the watched keys start with.
    ///   - type: The type each value decodes as.
    ///   - toAction: Turns each batch (the snapshot, then each revision's changes) into an action.
    ///   - fileID: The file of the call, where a failure is reported (the caller's by default).
    ///   - filePath: The full path of that file (the caller's by default).
    ///   - line: The line of the call (the caller's by default).
    ///   - column: The column of the call (the caller's by default).
    ///
    /// Like ``observe(_:_:fileID:filePath:line:column:)``, the watch is read on the main actor.
    public static func observe<Value: Codable & Sendable>(
        prefix: String,
        as type: Value.Type = Value.self,
        _ toAction: @escaping @Sendable (SharedItems<Value>) -> Action,
        catch handler: (@Sendable (SharedStateError) -> Action)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) -> Self {
        .run(
            operation: { @MainActor send in
                @Dependency(\.sharedState) var sharedState
                do {
                    try await sharedState.watch(prefixes: [prefix], fromRevision: nil).handleEach { batch in
                        if batch.kind != .progress { send(toAction(SharedItems(batch, as: Value.self))) }
                    }
                } catch {
                    guard !Task.isCancelled else { return }
                    if let handler {
                        send(handler(SharedStateError(error)))
                    } else {
                        reportIssue(
                            "The watch of prefix \(KeyRules.quoted(prefix)) ended: \(error)",
                            fileID: fileID,
                            filePath: filePath,
                            line: line,
                            column: column
                        )
                    }
                }
            },
            fileID: fileID, filePath: filePath, line: line, column: column)
    }

    /// Writes a typed key (write-through), then sends `toAction` with the result.
    ///
    /// Without `toAction`, a failed write is reported as an issue that names where the effect
    /// was made.
    ///
    /// Like ``observe(_:_:fileID:filePath:line:column:)``, it runs on the main actor: under `MainEventLoop` the write leaves
    /// from the thread that reads syncd's socket, without waking another thread on its way out.
    public static func set<Value>(
        _ key: SharedKey<Value>,
        to value: Value,
        ifVersion: UInt64? = nil,
        ephemeral: Bool = false,
        then toAction: (@Sendable (Result<PutResult, SharedStateError>) -> Action)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) -> Self {
        .run(
            operation: { @MainActor send in
                @Dependency(\.sharedState) var sharedState
                let result = await Result { () async throws(SharedStateError) in
                    try await sharedState.set(key, to: value, ifVersion: ifVersion, ephemeral: ephemeral)
                }
                if let toAction {
                    send(toAction(result))
                } else if case .failure(let error) = result {
                    reportIssue(
                        "Writing key \(KeyRules.quoted(key.name)) failed: \(error)",
                        fileID: fileID,
                        filePath: filePath,
                        line: line,
                        column: column
                    )
                }
            },
            fileID: fileID, filePath: filePath, line: line, column: column)
    }
}

extension SharedStateError {
    /// `error` as a shared-state error: itself, or `unavailable` carrying its description.
    @usableFromInline
    init(_ error: any Error) {
        self = (error as? SharedStateError) ?? SharedStateError(.unavailable, "\(error)")
    }
}
