import Dependencies

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
        case run(Run)
        case merge([Effect])
        case concatenate([Effect])
        case cancellable(id: EffectID, cancelInFlight: Bool, effect: Effect)
        case cancel(id: EffectID)
        /// Decided when the store plans it, from what the store remembers of `id` (see
        /// ``Effect/throttle(id:for:clock:latest:fileID:filePath:line:column:)``).
        case throttle(id: EffectID, decide: @Sendable (_ record: inout (any Sendable)?) -> Effect)
    }

    /// Asynchronous work, with what the store needs to start it as a task.
    struct Run: Sendable {
        var priority: TaskPriority?
        var name: String?
        /// Where the effect sits in the feature tree (the `ifLet`/`forEach` scopes it came through,
        /// outermost first): what `withTaskCancellation(id:)` and `Task.cancel(id:)` inside it use.
        var path: [EffectScope] = []
        /// Where the effect was made, to name it when it is still running at the end of a test.
        var location: SourceLocation?
        var body: @Sendable (Send<Action>) async -> Void
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
    /// sent after the task was cancelled. The task sees the dependencies that were in effect
    /// where the effect was made (inside the reducer, with any `.dependency` override of it).
    ///
    /// - Parameters:
    ///   - priority: The task's priority.
    ///   - name: The task's name, as debuggers and `Task.name` show it.
    ///   - operation: The work. An error it throws goes to `handler`.
    ///   - handler: Turns an error into actions. Without one, an error is reported as an issue
    ///     that names where the effect was made (a test failure under a test, a warning on
    ///     standard error otherwise). A `CancellationError`, and any error thrown once the effect
    ///     was cancelled, is never an error: nothing is reported and `handler` is not called.
    ///   - fileID: The file of the call, where a failure is reported (the caller's by default).
    ///   - filePath: The full path of that file (the caller's by default).
    ///   - line: The line of the call (the caller's by default).
    ///   - column: The column of the call (the caller's by default).
    public static func run(
        priority: TaskPriority? = nil,
        name: String? = nil,
        operation: @escaping @Sendable (_ send: Send<Action>) async throws -> Void,
        catch handler: (@Sendable (_ error: any Error, _ send: Send<Action>) async -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) -> Self {
        let location = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        return withEscapedDependencies { dependencies in
            Self(
                .run(
                    Run(priority: priority, name: name, location: location) { send in
                        await dependencies.yield {
                            do {
                                try await operation(send)
                            } catch {
                                // Cancelled on purpose, whatever the work threw on its way out.
                                if error is CancellationError || Task.isCancelled { return }
                                if let handler {
                                    await handler(error, send)
                                } else {
                                    location.report(
                                        """
                                        An effect threw an error that nothing handled: \(error)

                                        Catch it inside the effect, or pass `catch:` to `Effect.run` to turn it \
                                        into an action.
                                        """
                                    )
                                }
                            }
                        }
                    }
                )
            )
        }
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
    ///
    /// Leading effects that need no task (`.send`, `.cancel(id:)`) take effect inside the store's
    /// `send`, as if they had been merged: `.concatenate(.send(.a), .send(.b))` has reduced both
    /// actions when `send` returns.
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

    /// Two effects at the same time, without the array `merge` makes when either does nothing
    /// (the common case of a reducer and its child, on the path of every action).
    @usableFromInline
    static func both(_ first: Self, _ second: Self) -> Self {
        if first.isNone { return second }
        if second.isNone { return first }
        return Self(.merge([first, second]))
    }

    /// Whether the effect does nothing at all.
    @usableFromInline
    var isNone: Bool {
        if case .none = operation { return true }
        return false
    }

    /// Where the effect (its first asynchronous work) was made.
    var location: SourceLocation? {
        switch operation {
        case .none, .send, .cancel, .throttle: nil
        case .run(let run): run.location
        case .merge(let effects), .concatenate(let effects): effects.lazy.compactMap(\.location).first
        case .cancellable(_, _, let effect): effect.location
        }
    }

    /// Whether the effect does all its work inside the store's `send` (sending actions and
    /// cancelling), with no task to start.
    var isSynchronous: Bool {
        switch operation {
        case .none, .send, .cancel: true
        case .run, .throttle: false
        case .merge(let effects), .concatenate(let effects): effects.allSatisfy(\.isSynchronous)
        case .cancellable(_, _, let effect): effect.isSynchronous
        }
    }

    /// The same work, its actions turned into another feature's actions (how a child feature's
    /// effects reach its parent).
    public func map<T: Sendable>(_ transform: @escaping @Sendable (Action) -> T) -> Effect<T> {
        switch operation {
        case .none: .none
        case .send(let action): .send(transform(action))
        case .run(let run):
            Effect<T>(
                .run(
                    Effect<T>.Run(priority: run.priority, name: run.name, path: run.path, location: run.location) { send in
                        await run.body(send.map(transform))
                    }
                )
            )
        case .merge(let effects): Effect<T>(.merge(effects.map { $0.map(transform) }))
        case .concatenate(let effects): Effect<T>(.concatenate(effects.map { $0.map(transform) }))
        case .cancellable(let id, let cancelInFlight, let effect):
            Effect<T>(.cancellable(id: id, cancelInFlight: cancelInFlight, effect: effect.map(transform)))
        case .cancel(let id): Effect<T>(.cancel(id: id))
        case .throttle(let id, let decide): Effect<T>(.throttle(id: id) { decide(&$0).map(transform) })
        }
    }
}
