/// Combines the reducers of a ``Reducer/body`` or a ``CombineReducers``: each runs in order on
/// the same state, and their effects are merged.
@resultBuilder
public enum ReducerBuilder<State, Action: Sendable> {
    /// A reducer written in the builder, as it is.
    public static func buildExpression<R: Reducer>(_ reducer: R) -> R where R.State == State, R.Action == Action {
        reducer
    }

    /// An empty builder: a reducer that changes nothing and runs no effect.
    public static func buildBlock() -> EmptyReducer<State, Action> { EmptyReducer() }

    /// The first reducer of a block.
    public static func buildPartialBlock<R: Reducer>(first: R) -> R where R.State == State, R.Action == Action {
        first
    }

    /// The reducers so far, then `next`, on the same state; their effects merged.
    public static func buildPartialBlock<R0: Reducer, R1: Reducer>(
        accumulated: R0,
        next: R1
    ) -> CombinedReducer<R0, R1> where R0.State == State, R0.Action == Action, R1.State == State, R1.Action == Action {
        CombinedReducer(first: accumulated, second: next)
    }

    /// The reducer of an `if` without an `else`: nothing when the condition was false.
    public static func buildOptional<R: Reducer>(_ reducer: R?) -> OptionalReducer<R>
    where R.State == State, R.Action == Action {
        OptionalReducer(wrapped: reducer)
    }

    /// The reducer of an `if`'s first branch (or a `switch`'s first case).
    public static func buildEither<First: Reducer, Second: Reducer>(
        first reducer: First
    ) -> EitherReducer<First, Second> where First.State == State, First.Action == Action {
        .first(reducer)
    }

    /// The reducer of the other branch.
    public static func buildEither<First: Reducer, Second: Reducer>(
        second reducer: Second
    ) -> EitherReducer<First, Second> where Second.State == State, Second.Action == Action {
        .second(reducer)
    }

    /// A reducer inside `if #available`, with its type erased.
    public static func buildLimitedAvailability<R: Reducer>(_ reducer: R) -> Reduce<State, Action>
    where R.State == State, R.Action == Action {
        Reduce(reducer)
    }
}

/// Runs its reducers in order, like a ``Reducer/body``: for grouping reducers that a modifier
/// such as ``Reducer/ifLet(_:action:then:fileID:filePath:line:column:)`` applies to together.
public struct CombineReducers<State, Action: Sendable, Reducers: Reducer>: Reducer
where Reducers.State == State, Reducers.Action == Action {
    private let reducers: Reducers

    /// Combines the reducers `build` returns.
    public init(@ReducerBuilder<State, Action> _ build: () -> Reducers) {
        self.reducers = build()
    }

    /// Runs the combined reducers in order, their effects merged.
    public func reduce(into state: inout State, action: Action) -> Effect<Action> {
        reducers.reduce(into: &state, action: action)
    }

    public var _reduceFunction: (inout State, Action) -> Effect<Action> { reducers._reduceFunction }
}

/// A reducer that does nothing.
public struct EmptyReducer<State, Action: Sendable>: Reducer {
    /// Creates a reducer that does nothing.
    public init() {}

    /// Changes nothing and returns no effect.
    public func reduce(into state: inout State, action: Action) -> Effect<Action> { .none }
}

/// Two reducers, one after the other, their effects merged.
public struct CombinedReducer<First: Reducer, Second: Reducer>: Reducer
where First.State == Second.State, First.Action == Second.Action {
    let first: First
    let second: Second

    /// Runs the first reducer, then the second, and merges their effects.
    public func reduce(into state: inout First.State, action: First.Action) -> Effect<First.Action> {
        let firstEffect = first.reduce(into: &state, action: action)
        let secondEffect = second.reduce(into: &state, action: action)
        if firstEffect.isNone { return secondEffect }
        if secondEffect.isNone { return firstEffect }
        return .merge(firstEffect, secondEffect)
    }

    public var _reduceFunction: (inout First.State, First.Action) -> Effect<First.Action> {
        let first = first._reduceFunction
        let second = second._reduceFunction
        return { state, action in
            let firstEffect = first(&state, action)
            let secondEffect = second(&state, action)
            if firstEffect.isNone { return secondEffect }
            if secondEffect.isNone { return firstEffect }
            return .merge(firstEffect, secondEffect)
        }
    }
}

/// A reducer included by an `if` without `else` in a builder.
public struct OptionalReducer<Wrapped: Reducer>: Reducer {
    let wrapped: Wrapped?

    /// Runs the wrapped reducer when the `if` included it; otherwise does nothing.
    public func reduce(into state: inout Wrapped.State, action: Wrapped.Action) -> Effect<Wrapped.Action> {
        wrapped?.reduce(into: &state, action: action) ?? .none
    }

    public var _reduceFunction: (inout Wrapped.State, Wrapped.Action) -> Effect<Wrapped.Action> {
        wrapped?._reduceFunction ?? { _, _ in .none }
    }
}

/// One of two reducers, chosen by an `if`/`else` or a `switch` in a builder.
public enum EitherReducer<First: Reducer, Second: Reducer>: Reducer
where First.State == Second.State, First.Action == Second.Action {
    /// The first branch's reducer.
    case first(First)
    /// The second branch's reducer.
    case second(Second)

    /// Runs the reducer of the branch taken.
    public func reduce(into state: inout First.State, action: First.Action) -> Effect<First.Action> {
        switch self {
        case .first(let reducer): reducer.reduce(into: &state, action: action)
        case .second(let reducer): reducer.reduce(into: &state, action: action)
        }
    }

    public var _reduceFunction: (inout First.State, First.Action) -> Effect<First.Action> {
        switch self {
        case .first(let reducer): reducer._reduceFunction
        case .second(let reducer): reducer._reduceFunction
        }
    }
}
