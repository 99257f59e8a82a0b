import CasePaths

/// Runs a child feature's reducer on part of the parent's state, for the parent's actions that
/// carry a child action.
///
/// ```swift
/// var body: some ReducerOf<Self> {
///     Scope(state: \.heater, action: \.heater) { Heater() }
///     Reduce { state, action in ... }   // the parent's own logic, after the child's
/// }
/// ```
///
/// The child's effects send their actions back embedded in the parent's action.
public struct Scope<ParentState, ParentAction: Sendable, Child: Reducer>: Reducer {
    private let state: WritableKeyPath<ParentState, Child.State>
    private let action: AnyCasePath<ParentAction, Child.Action>
    private let child: Child

    /// Scopes `child` to the state at `state` and the actions of case `action`.
    public init<ChildState, ChildAction: Sendable>(
        state: WritableKeyPath<ParentState, ChildState>,
        action: CaseKeyPath<ParentAction, ChildAction>,
        @ReducerBuilder<ChildState, ChildAction> child: () -> Child
    ) where ParentAction: CasePathable, Child.State == ChildState, Child.Action == ChildAction {
        self.state = state
        self.action = AnyCasePath(action)
        self.child = child()
    }

    public func reduce(into parent: inout ParentState, action parentAction: ParentAction) -> Effect<ParentAction> {
        guard let childAction = action.extract(from: parentAction) else { return .none }
        let embed = UncheckedBox(action)
        return child.reduce(into: &parent[keyPath: state], action: childAction)
            .map { embed.value.embed($0) }
    }
}

/// Carries a value that is immutable and only read, but not declared `Sendable` (case paths and
/// key paths built by the compiler), into a `@Sendable` closure.
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value

    init(_ value: Value) {
        self.value = value
    }
}
