import CasePaths

extension Reducer {
    /// Runs `child` on one case of an enum state while the state is in that case, before this
    /// reducer.
    ///
    /// The rules are ``ifLet(_:action:then:fileID:filePath:line:column:)``'s: a child action
    /// that arrives while the state is in another case is reported as an issue; when the state
    /// leaves the case, or the case holds another child (another `id`, another inner case), the
    /// old child's running effects are cancelled, except those it returned for the action that
    /// removed it; its cancellation ids are its own.
    ///
    /// ```swift
    /// @CasePathable enum State { case loggedOut(Login.State), loggedIn(Session.State) }
    ///
    /// Reduce { state, action in ... }
    ///     .ifCaseLet(\.loggedIn, action: \.session) { Session() }
    /// ```
    @inlinable
    public func ifCaseLet<CaseState, CaseAction: Sendable, Child: Reducer>(
        _ state: EnumCase<State, CaseState>,
        action: EnumCase<Action, CaseAction>,
        @ReducerBuilder<CaseState, CaseAction> then child: () -> Child,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) -> IfCaseLetReducer<Self, Child>
    where State: CasePathable, Action: CasePathable, Child.State == CaseState, Child.Action == CaseAction {
        IfCaseLetReducer(
            parent: _reduceFunction,
            child: child()._reduceFunction,
            keyPath: state,
            state: State.casePath(state),
            action: Action.casePath(action),
            location: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        )
    }
}

/// A parent reducer with a child feature on one case of its enum state; see
/// ``Reducer/ifCaseLet(_:action:then:fileID:filePath:line:column:)``.
public struct IfCaseLetReducer<Parent: Reducer, Child: Reducer>: Reducer {
    @usableFromInline let run: (inout Parent.State, Parent.Action) -> Effect<Parent.Action>

    /// Built where the reducer is made, so that the compiler specializes the code for the
    /// feature's own types there.
    @inlinable
    init(
        parent: @escaping (inout Parent.State, Parent.Action) -> Effect<Parent.Action>,
        child: @escaping (inout Child.State, Child.Action) -> Effect<Child.Action>,
        keyPath: AnyKeyPath,
        state: AnyCasePath<Parent.State, Child.State>,
        action: AnyCasePath<Parent.Action, Child.Action>,
        location: SourceLocation
    ) {
        let steps = Steps(parent: parent, child: child, keyPath: keyPath, state: state, action: action, location: location)
        run = { steps.reduce(into: &$0, action: $1) }
    }

    /// Runs the parent reducer, and before it the child's for the child's actions while the state is in its case.
    public func reduce(into state: inout Parent.State, action: Parent.Action) -> Effect<Parent.Action> {
        run(&state, action)
    }

    public var _reduceFunction: (inout Parent.State, Parent.Action) -> Effect<Parent.Action> { run }
}

extension IfCaseLetReducer {
    @usableFromInline
    struct Steps {
        @usableFromInline let parent: (inout Parent.State, Parent.Action) -> Effect<Parent.Action>
        @usableFromInline let child: (inout Child.State, Child.Action) -> Effect<Child.Action>
        /// The case's key path, naming the child's place in the feature tree.
        @usableFromInline let keyPath: AnyKeyPath
        @usableFromInline let state: AnyCasePath<Parent.State, Child.State>
        @usableFromInline let action: AnyCasePath<Parent.Action, Child.Action>
        @usableFromInline let location: SourceLocation

        @inlinable
        init(
            parent: @escaping (inout Parent.State, Parent.Action) -> Effect<Parent.Action>,
            child: @escaping (inout Child.State, Child.Action) -> Effect<Child.Action>,
            keyPath: AnyKeyPath,
            state: AnyCasePath<Parent.State, Child.State>,
            action: AnyCasePath<Parent.Action, Child.Action>,
            location: SourceLocation
        ) {
            self.parent = parent
            self.child = child
            self.keyPath = keyPath
            self.state = state
            self.action = action
            self.location = location
        }

        @inlinable
        func reduce(into parentState: inout Parent.State, action parentAction: Parent.Action) -> Effect<Parent.Action> {
            let initial = identity(in: parentState)
            let childEffect = reduceChild(into: &parentState, action: parentAction)
            let afterChild = identity(in: parentState)
            let parentEffect = parent(&parentState, parentAction)
            let after = identity(in: parentState)
            var gone: [AnyHashable] = []
            for identity in [initial, afterChild] {
                if let identity, identity != after, !gone.contains(identity) { gone.append(identity) }
            }
            guard !gone.isEmpty else { return .both(childEffect, parentEffect) }
            return .merge([childEffect, parentEffect] + gone.map { .cancelEffects(ofChild: scope($0)) })
        }

        @inlinable
        func identity(in parentState: Parent.State) -> AnyHashable? {
            state.extract(from: parentState).map(navigationIdentity(of:))
        }

        @inlinable
        func scope(_ identity: AnyHashable) -> EffectScope {
            EffectScope(keyPath: keyPath, identity: identity)
        }

        @inlinable
        func reduceChild(into parentState: inout Parent.State, action parentAction: Parent.Action) -> Effect<Parent.Action> {
            guard let childAction = action.extract(from: parentAction) else { return .none }
            guard var childState = state.extract(from: parentState) else {
                location.report(
                    """
                    An "ifCaseLet" at \(location) received a child action while the state was in \
                    another case:
                      \(childAction)
                    Cancel the child's effects when its case goes away, or ignore actions that can \
                    arrive late.
                    """
                )
                return .none
            }
            let effect = child(&childState, childAction)
            parentState = state.embed(childState)
            if effect.isNone { return .none }
            let scope = scope(navigationIdentity(of: childState))
            let embed = UncheckedBox(action)
            return
                effect
                .map { embed.value.embed($0) }
                .scoped(to: scope)
                .cancellable(withChild: scope)
        }
    }
}
