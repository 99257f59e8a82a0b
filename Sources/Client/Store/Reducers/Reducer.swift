/// A feature's logic: how an action changes the state, and what work follows.
///
/// Write a reducer either with ``reduce(into:action:)``, or with a ``body`` that combines other
/// reducers:
///
/// ```swift
/// struct Counter: Reducer {
///     struct State: Equatable { var count = 0 }
///     enum Action: Sendable { case increment, reset }
///
///     func reduce(into state: inout State, action: Action) -> Effect<Action> {
///         switch action {
///         case .increment: state.count += 1
///         case .reset: state.count = 0
///         }
///         return .none
///     }
/// }
///
/// struct App: Reducer {
///     struct State: Equatable { var counter = Counter.State() }
///     @CasePathable enum Action: Sendable { case counter(Counter.Action) }
///
///     var body: some ReducerOf<Self> {
///         Scope(state: \.counter, action: \.counter) { Counter() }
///     }
/// }
/// ```
///
/// A reducer must be quick and must not do I/O itself: it returns an ``Effect`` for that.
public protocol Reducer<State, Action> {
    /// The feature's state.
    associatedtype State
    /// Everything that can happen to the feature.
    associatedtype Action: Sendable
    /// The reducer this one is made of, when it is written with ``body``.
    associatedtype Body

    /// Changes `state` for `action` and returns the work that follows.
    func reduce(into state: inout State, action: Action) -> Effect<Action>

    /// The reducers this one is made of, combined in order.
    @ReducerBuilder<State, Action>
    var body: Body { get }

    /// The function that reduces, with ``body`` built now, once.
    ///
    /// The store and the reducers that hold other reducers (`Scope`, `ifLet`, `forEach`…) keep
    /// this instead of the reducer, so that a `body` is built once rather than for every action
    /// (building one makes its key paths anew, which costs microseconds). The protocol's
    /// extensions implement it; a reducer does not. The reducers of this module that hold others
    /// build theirs in an `@inlinable` initializer, so that it is compiled for the feature's types
    /// where the feature is.
    var _reduceFunction: (inout State, Action) -> Effect<Action> { get }
}

extension Reducer where Body == Never {
    /// A reducer written with ``reduce(into:action:)`` has no body.
    public var body: Body {
        fatalError("\(Self.self) has no body: it implements reduce(into:action:) itself.")
    }

    @inlinable
    public var _reduceFunction: (inout State, Action) -> Effect<Action> { reduce(into:action:) }
}

extension Reducer where Body: Reducer, Body.State == State, Body.Action == Action {
    /// Runs ``body``.
    public func reduce(into state: inout State, action: Action) -> Effect<Action> {
        body.reduce(into: &state, action: action)
    }

    @inlinable
    public var _reduceFunction: (inout State, Action) -> Effect<Action> { body._reduceFunction }
}

/// A reducer of `R`'s state and actions: `var body: some ReducerOf<Self>`.
public typealias ReducerOf<R: Reducer> = Reducer<R.State, R.Action>
