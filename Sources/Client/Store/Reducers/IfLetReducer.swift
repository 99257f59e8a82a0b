import CasePaths

extension Reducer {
    /// Runs `child` on optional child state while it exists, before this reducer.
    ///
    /// Child actions that arrive while the state is nil are reported as an issue (a test failure
    /// under a test): they usually mean an effect outlived the feature. When this reducer sets the
    /// child state to nil, or replaces the child by another (another enum case, another `id`),
    /// the old child's running effects are cancelled; the effects the child returned for the
    /// action that removed it still run. The child's cancellation ids are its own: they cannot
    /// cancel the parent's effects, while the parent's `.cancel(id:)` of an id reaches the
    /// child's effects under that id too.
    ///
    /// ```swift
    /// Reduce { state, action in ... }
    ///     .ifLet(\.alert, action: \.alert) { Alert() }
    /// ```
    @inlinable
    public func ifLet<ChildState, ChildAction: Sendable, Child: Reducer>(
        _ state: WritableKeyPath<State, ChildState?>,
        action: EnumCase<Action, ChildAction>,
        @ReducerBuilder<ChildState, ChildAction> then child: () -> Child,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) -> IfLetReducer<Self, Child>
    where Action: CasePathable, Child.State == ChildState, Child.Action == ChildAction {
        IfLetReducer(
            parent: _reduceFunction,
            child: child()._reduceFunction,
            state: state,
            action: Action.casePath(action),
            location: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        )
    }
}

/// A parent reducer with a child feature on optional state; see
/// ``Reducer/ifLet(_:action:then:fileID:filePath:line:column:)``.
public struct IfLetReducer<Parent: Reducer, Child: Reducer>: Reducer {
    @usableFromInline let run: (inout Parent.State, Parent.Action) -> Effect<Parent.Action>

    /// Built where the reducer is made, so that the compiler specializes the code for the
    /// feature's own types there.
    @inlinable
    init(
        parent: @escaping (inout Parent.State, Parent.Action) -> Effect<Parent.Action>,
        child: @escaping (inout Child.State, Child.Action) -> Effect<Child.Action>,
        state: WritableKeyPath<Parent.State, Child.State?>,
        action: AnyCasePath<Parent.Action, Child.Action>,
        location: SourceLocation
    ) {
        let steps = Steps(parent: parent, child: child, state: state, action: action, location: location)
        run = { steps.reduce(into: &$0, action: $1) }
    }

    /// Runs the parent reducer, and before it the child's for the child's actions while its state is present.
    public func reduce(into state: inout Parent.State, action: Parent.Action) -> Effect<Parent.Action> {
        run(&state, action)
    }

    public var _reduceFunction: (inout Parent.State, Parent.Action) -> Effect<Parent.Action> { run }
}

extension IfLetReducer {
    @usableFromInline
    struct Steps {
        @usableFromInline let parent: (inout Parent.State, Parent.Action) -> Effect<Parent.Action>
        @usableFromInline let child: (inout Child.State, Child.Action) -> Effect<Child.Action>
        @usableFromInline let state: WritableKeyPath<Parent.State, Child.State?>
        @usableFromInline let action: AnyCasePath<Parent.Action, Child.Action>
        @usableFromInline let location: SourceLocation

        @inlinable
        init(
            parent: @escaping (inout Parent.State, Parent.Action) -> Effect<Parent.Action>,
            child: @escaping (inout Child.State, Child.Action) -> Effect<Child.Action>,
            state: WritableKeyPath<Parent.State, Child.State?>,
            action: AnyCasePath<Parent.Action, Child.Action>,
            location: SourceLocation
        ) {
            self.parent = parent
            self.child = child
            self.state = state
            self.action = action
            self.location = location
        }

        @inlinable
        func reduce(into parentState: inout Parent.State, action parentAction: Parent.Action) -> Effect<Parent.Action> {
            let initial = parentState[keyPath: state].map(navigationIdentity(of:))
            let childEffect = reduceChild(into: &parentState, action: parentAction)
            let afterChild = parentState[keyPath: state].map(navigationIdentity(of:))
            let parentEffect = parent(&parentState, parentAction)
            let after = parentState[keyPath: state].map(navigationIdentity(of:))
            // A child that went away or was replaced by another (by the parent, or by the child
            // itself, an enum moving to another case): its effects end with it.
            var gone: [AnyHashable] = []
            for identity in [initial, afterChild] {
                if let identity, identity != after, !gone.contains(identity) { gone.append(identity) }
            }
            guard !gone.isEmpty else { return .both(childEffect, parentEffect) }
            return .merge([childEffect, parentEffect] + gone.map { .cancelEffects(ofChild: scope($0)) })
        }

        @inlinable
        func scope(_ identity: AnyHashable) -> EffectScope {
            EffectScope(keyPath: state, identity: identity)
        }

        @inlinable
        func reduceChild(into parentState: inout Parent.State, action parentAction: Parent.Action) -> Effect<Parent.Action> {
            guard let childAction = action.extract(from: parentAction) else { return .none }
            guard parentState[keyPath: state] != nil else {
                location.report(
                    """
                    An "ifLet" at \(location) received a child action while its state was nil:
                      \(childAction)
                    Cancel the child's effects when it goes away, or ignore actions that can arrive late.
                    """
                )
                return .none
            }
            let effect = child(&parentState[keyPath: state]!, childAction)
            if effect.isNone { return .none }
            let embed = UncheckedBox(action)
            // Tagged with the child as it is now: if it became another child, its effects are the new one's.
            let scope = scope(navigationIdentity(of: parentState[keyPath: state]!))
            return
                effect
                .map { embed.value.embed($0) }
                .scoped(to: scope)
                .cancellable(withChild: scope)
        }
    }
}
