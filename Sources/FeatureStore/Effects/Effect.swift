import IssueReporting

/// The work a reducer asks the store to do after it changed the state: nothing, more actions, or
/// asynchronous work that may send actions back.
///
/// ```swift
/// case .refreshTapped:
///     state.isLoading = true
///     return .run { send in
///         let reading = try await thermometer.read()
///         await send(.readingLoaded(reading))
///     } catch: { error, send in
///         await send(.readingFailed("\(error)"))
///     }
/// ```
///
/// Effects are values: a reducer returns them and the ``Store`` runs them, so a ``TestStore`` can
/// check every action they send back. The store never runs two reducer calls at once, whatever
/// the effects do.
public struct Effect<Action: Sendable>: Sendable {
    indirect enum Operation: Sendable {
        case none
        case send(Action)
        case run(priority: TaskPriority?, body: @Sendable (Send<Action>) async -> Void)
        case merge([Effect])
        case concatenate([Effect])
        case cancellable(id: EffectID, cancelInFlight: Bool, effect: Effect)
        case cancel(id: EffectID)
    }

    let operation: Operation

    init(_ operation: Operation) {
        self.operation = operation
    }

    /// No work: the reducer only changed the state.
    public static var none: Self { Self(.none) }

    /// Feeds `action` back into the store right after the current one, in the same
    /// ``Store/send(_:)``, before the main actor does anything else.
    ///
    /// Prefer calling a shared helper over sending actions to share logic; use this to tell a
    /// parent feature something (a delegate action).
    public static func send(_ action: Action) -> Self { Self(.send(action)) }

    /// Runs `operation` as a task of the store; it sends actions back through `send`.
    ///
    /// The task is cancelled when the store goes away, or by ``cancel(id:)`` when the effect is
    /// ``cancellable(id:cancelInFlight:)``. Cancellation is cooperative: `send` ignores actions
    /// sent after the task was cancelled.
    ///
    /// - Parameters:
    ///   - priority: The task's priority.
    ///   - operation: The work. An error it throws goes to `handler`.
    ///   - handler: Turns an error into actions. Without one, an error is reported as an issue
    ///     that names where the effect was made (a test failure under a test, a warning on
    ///     standard error otherwise); cancellation is never an error.
    public static func run(
        priority: TaskPriority? = nil,
        operation: @escaping @Sendable (_ send: Send<Action>) async throws -> Void,
        catch handler: (@Sendable (_ error: any Error, _ send: Send<Action>) async -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) -> Self {
        Self(
            .run(priority: priority) { send in
                do {
                    try await operation(send)
                } catch is CancellationError where Task.isCancelled {
                    // Cancelled on purpose: nothing to report.
                } catch {
                    if let handler {
                        await handler(error, send)
                    } else {
                        reportIssue(
                            """
                            An effect threw an error that nothing handled: \(error)

                            Catch it inside the effect, or pass `catch:` to `Effect.run` to turn it \
                            into an action.
                            """,
                            fileID: fileID,
                            filePath: filePath,
                            line: line,
                            column: column
                        )
                    }
                }
            }
        )
    }

    /// Runs `effects` at the same time.
    public static func merge(_ effects: Self...) -> Self { merge(effects) }

    /// Runs `effects` at the same time.
    public static func merge(_ effects: some Sequence<Self>) -> Self {
        let effects = effects.filter { !$0.isNone }
        switch effects.count {
        case 0: return .none
        case 1: return effects[0]
        default: return Self(.merge(effects))
        }
    }

    /// Runs `effects` one after the other: each starts when the one before has finished.
    public static func concatenate(_ effects: Self...) -> Self { concatenate(effects) }

    /// Runs `effects` one after the other: each starts when the one before has finished.
    public static func concatenate(_ effects: some Sequence<Self>) -> Self {
        let effects = effects.filter { !$0.isNone }
        switch effects.count {
        case 0: return .none
        case 1: return effects[0]
        default: return Self(.concatenate(effects))
        }
    }

    /// This effect, then `other`.
    public func concatenate(with other: Self) -> Self { .concatenate(self, other) }

    /// This effect and `other` at the same time.
    public func merge(with other: Self) -> Self { .merge(self, other) }

    /// Whether the effect does nothing at all.
    var isNone: Bool {
        if case .none = operation { return true }
        return false
    }

    /// The same work, its actions turned into another feature's actions (how a child feature's
    /// effects reach its parent).
    public func map<T: Sendable>(_ transform: @escaping @Sendable (Action) -> T) -> Effect<T> {
        switch operation {
        case .none: .none
        case .send(let action): .send(transform(action))
        case .run(let priority, let body):
            Effect<T>(.run(priority: priority) { send in await body(send.map(transform)) })
        case .merge(let effects): Effect<T>(.merge(effects.map { $0.map(transform) }))
        case .concatenate(let effects): Effect<T>(.concatenate(effects.map { $0.map(transform) }))
        case .cancellable(let id, let cancelInFlight, let effect):
            Effect<T>(.cancellable(id: id, cancelInFlight: cancelInFlight, effect: effect.map(transform)))
        case .cancel(let id): Effect<T>(.cancel(id: id))
        }
    }
}
