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
///
/// The child's state may also be one case of an enum state, which is how a reducer of several
/// screens (the elements of a navigation stack) is written:
///
/// ```swift
/// struct Path: Reducer {
///     @CasePathable enum State: Equatable, Sendable { case sensor(SensorScreen.State), alert(AlertScreen.State) }
///     @CasePathable enum Action: Sendable { case sensor(SensorScreen.Action), alert(AlertScreen.Action) }
///
///     var body: some ReducerOf<Self> {
///         Scope(state: \.sensor, action: \.sensor) { SensorScreen() }
///         Scope(state: \.alert, action: \.alert) { AlertScreen() }
///     }
/// }
/// ```
public struct Scope<ParentState, ParentAction: Sendable, Child: Reducer>: Reducer {
    @usableFromInline let run: (inout ParentState, ParentAction) -> Effect<ParentAction>

    /// Scopes `child` to the state at `state` and the actions of case `action`.
    @inlinable
    public init<ChildState, ChildAction: Sendable>(
        state: WritableKeyPath<ParentState, ChildState>,
        action: EnumCase<ParentAction, ChildAction>,
        @ReducerBuilder<ChildState, ChildAction> child: () -> Child
    ) where ParentAction: CasePathable, Child.State == ChildState, Child.Action == ChildAction {
        let action = ParentAction.casePath(action)
        let child = child()._reduceFunction
        run = { parent, parentAction in
            guard let childAction = action.extract(from: parentAction) else { return .none }
            return Self.embed(child(&parent[keyPath: state], childAction), action)
        }
    }

    /// Scopes `child` to one case of an enum state and the actions of case `action`. A child
    /// action that arrives while the state is in another case is reported as an issue.
    @inlinable
    public init<ChildState, ChildAction: Sendable>(
        state: EnumCase<ParentState, ChildState>,
        action: EnumCase<ParentAction, ChildAction>,
        @ReducerBuilder<ChildState, ChildAction> child: () -> Child,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) where ParentState: CasePathable, ParentAction: CasePathable, Child.State == ChildState, Child.Action == ChildAction {
        let state = ParentState.casePath(state)
        let action = ParentAction.casePath(action)
        let child = child()._reduceFunction
        let location = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        run = { parent, parentAction in
            guard let childAction = action.extract(from: parentAction) else { return .none }
            guard var childState = state.extract(from: parent) else {
                location.report(
                    """
                    A "Scope" at \(location) received a child action while the state was in \
                    another case:
                      \(childAction)
                    """
                )
                return .none
            }
            let effect = child(&childState, childAction)
            parent = state.embed(childState)
            return Self.embed(effect, action)
        }
    }

    /// Runs the child reducer on the child's part of the parent's state, for child actions.
    public func reduce(into parent: inout ParentState, action: ParentAction) -> Effect<ParentAction> {
        run(&parent, action)
    }

    public var _reduceFunction: (inout ParentState, ParentAction) -> Effect<ParentAction> { run }

    @inlinable
    static func embed(
        _ effect: Effect<Child.Action>,
        _ action: AnyCasePath<ParentAction, Child.Action>
    ) -> Effect<ParentAction> {
        if effect.isNone { return .none }
        let embed = UncheckedBox(action)
        return effect.map { embed.value.embed($0) }
    }
}

/// Carries a value that is immutable and only read, but not declared `Sendable` (case paths and
/// key paths built by the compiler), into a `@Sendable` closure.
@usableFromInline
struct UncheckedBox<Value>: @unchecked Sendable {
    @usableFromInline let value: Value

    @usableFromInline
    init(_ value: Value) {
        self.value = value
    }
}
