/// A reducer made of a closure, for logic written inline in a ``Reducer/body``.
///
/// ```swift
/// var body: some ReducerOf<Self> {
///     Reduce { state, action in
///         switch action {
///         case .increment:
///             state.count += 1
///             return .none
///         }
///     }
/// }
/// ```
public struct Reduce<State, Action: Sendable>: Reducer {
    private let reduce: (inout State, Action) -> Effect<Action>

    /// Creates a reducer from a closure.
    public init(_ reduce: @escaping (_ state: inout State, _ action: Action) -> Effect<Action>) {
        self.reduce = reduce
    }

    /// Wraps any reducer of the same state and actions.
    public init<R: Reducer>(_ reducer: R) where R.State == State, R.Action == Action {
        self.reduce = reducer._reduceFunction
    }

    /// Runs the closure this reducer was made with.
    public func reduce(into state: inout State, action: Action) -> Effect<Action> {
        reduce(&state, action)
    }
}
