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
    /// Where the child's state is: a property, or one case of an enum.
    private enum Place {
        case property(WritableKeyPath<ParentState, Child.State>)
        case enumCase(AnyCasePath<ParentState, Child.State>, SourceLocation)
    }

    private let place: Place
    private let action: AnyCasePath<ParentAction, Child.Action>
    private let child: (inout Child.State, Child.Action) -> Effect<Child.Action>

    /// Scopes `child` to the state at `state` and the actions of case `action`.
    public init<ChildState, ChildAction: Sendable>(
        state: WritableKeyPath<ParentState, ChildState>,
        action: CaseKeyPath<ParentAction, ChildAction>,
        @ReducerBuilder<ChildState, ChildAction> child: () -> Child
    ) where ParentAction: CasePathable, Child.State == ChildState, Child.Action == ChildAction {
        self.place = .property(state)
        self.action = AnyCasePath(action)
        self.child = child()._reduceFunction
    }

    /// Scopes `child` to one case of an enum state and the actions of case `action`. A child
    /// action that arrives while the state is in another case is reported as an issue.
    public init<ChildState, ChildAction: Sendable>(
        state: CaseKeyPath<ParentState, ChildState>,
        action: CaseKeyPath<ParentAction, ChildAction>,
        @ReducerBuilder<ChildState, ChildAction> child: () -> Child,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) where ParentState: CasePathable, ParentAction: CasePathable, Child.State == ChildState, Child.Action == ChildAction {
        self.place = .enumCase(
            AnyCasePath(state),
            SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        )
        self.action = AnyCasePath(action)
        self.child = child()._reduceFunction
    }

    public func reduce(into parent: inout ParentState, action parentAction: ParentAction) -> Effect<ParentAction> {
        guard let childAction = action.extract(from: parentAction) else { return .none }
        let effect: Effect<Child.Action>
        switch place {
        case .property(let state):
            effect = child(&parent[keyPath: state], childAction)
        case .enumCase(let state, let location):
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
            effect = child(&childState, childAction)
            parent = state.embed(childState)
        }
        if effect.isNone { return .none }
        let embed = UncheckedBox(action)
        return effect.map { embed.value.embed($0) }
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
