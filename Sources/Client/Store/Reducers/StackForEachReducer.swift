import CasePaths

extension Reducer {
    /// Runs `destination` on the elements of a navigation stack, for the parent's actions that
    /// carry a ``StackAction``, before this reducer.
    ///
    /// - `.element(id:action:)` runs `destination` on that element, then this reducer.
    /// - `.push(id:state:)` and `.popFrom(id:)` run this reducer first, then push or pop.
    ///
    /// When an element leaves the stack (popped by an action, or removed by this reducer), its
    /// running effects are cancelled; the effects it returned for the action that removed it
    /// still run. Each element's cancellation ids are its own, as with
    /// ``forEach(_:action:element:fileID:filePath:line:column:)``.
    ///
    /// ```swift
    /// Reduce { state, action in ... }
    ///     .forEach(\.path, action: \.path) { Path() }
    /// ```
    @inlinable
    public func forEach<DestinationState: Sendable, DestinationAction: Sendable, Destination: Reducer>(
        _ state: WritableKeyPath<State, StackState<DestinationState>>,
        action: EnumCase<Action, StackAction<DestinationState, DestinationAction>>,
        @ReducerBuilder<DestinationState, DestinationAction> destination: () -> Destination,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) -> StackForEachReducer<Self, Destination>
    where Action: CasePathable, Destination.State == DestinationState, Destination.Action == DestinationAction {
        StackForEachReducer(
            parent: _reduceFunction,
            destination: destination()._reduceFunction,
            state: state,
            action: Action.casePath(action),
            location: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        )
    }
}

/// A parent reducer with a navigation stack of child features; see
/// ``Reducer/forEach(_:action:destination:fileID:filePath:line:column:)``.
public struct StackForEachReducer<Parent: Reducer, Destination: Reducer>: Reducer
where Destination.State: Sendable {
    @usableFromInline let run: (inout Parent.State, Parent.Action) -> Effect<Parent.Action>

    /// Built where `forEach` is called, so that the compiler specializes the code for the
    /// feature's own types there.
    @inlinable
    init(
        parent: @escaping (inout Parent.State, Parent.Action) -> Effect<Parent.Action>,
        destination: @escaping (inout Destination.State, Destination.Action) -> Effect<Destination.Action>,
        state: WritableKeyPath<Parent.State, StackState<Destination.State>>,
        action: AnyCasePath<Parent.Action, StackAction<Destination.State, Destination.Action>>,
        location: SourceLocation
    ) {
        let steps = Steps(parent: parent, destination: destination, state: state, action: action, location: location)
        run = { steps.reduce(into: &$0, action: $1) }
    }

    /// Runs the parent reducer, and before it the destination's reducer for the actions of an element still on the stack.
    public func reduce(into state: inout Parent.State, action: Parent.Action) -> Effect<Parent.Action> {
        run(&state, action)
    }

    public var _reduceFunction: (inout Parent.State, Parent.Action) -> Effect<Parent.Action> { run }
}

extension StackForEachReducer {
    @usableFromInline
    struct Steps {
        @usableFromInline let parent: (inout Parent.State, Parent.Action) -> Effect<Parent.Action>
        @usableFromInline let destination: (inout Destination.State, Destination.Action) -> Effect<Destination.Action>
        @usableFromInline let state: WritableKeyPath<Parent.State, StackState<Destination.State>>
        @usableFromInline let action: AnyCasePath<Parent.Action, StackAction<Destination.State, Destination.Action>>
        @usableFromInline let location: SourceLocation

        @inlinable
        init(
            parent: @escaping (inout Parent.State, Parent.Action) -> Effect<Parent.Action>,
            destination: @escaping (inout Destination.State, Destination.Action) -> Effect<Destination.Action>,
            state: WritableKeyPath<Parent.State, StackState<Destination.State>>,
            action: AnyCasePath<Parent.Action, StackAction<Destination.State, Destination.Action>>,
            location: SourceLocation
        ) {
            self.parent = parent
            self.destination = destination
            self.state = state
            self.action = action
            self.location = location
        }

        @inlinable
        func reduce(into parentState: inout Parent.State, action parentAction: Parent.Action) -> Effect<Parent.Action> {
            let stackAction = action.extract(from: parentAction)
            let before = (origin: parentState[keyPath: state].origin, ids: parentState[keyPath: state].ids)
            var elementEffect = Effect<Parent.Action>.none
            if case .element(let id, let elementAction) = stackAction {
                elementEffect = reduceElement(id, elementAction, in: &parentState)
            }
            let parentEffect = parent(&parentState, parentAction)
            switch stackAction {
            case .push(let id, let element):
                if parentState[keyPath: state].index(of: id) != nil {
                    location.report(
                        """
                        A "forEach" at \(location) received a push of element \(id), which is already \
                        on the stack; the push was ignored. Push with the stack's `nextID`.
                        """
                    )
                } else {
                    parentState[keyPath: state].push(element, id: id)
                }
            case .popFrom(let id):
                if parentState[keyPath: state].index(of: id) != nil {
                    parentState[keyPath: state].pop(from: id)
                } else {
                    location.report(
                        """
                        A "forEach" at \(location) received a pop from element \(id), which is not on \
                        the stack; nothing was popped.
                        """
                    )
                }
            case .element, nil:
                break
            }
            let after = (origin: parentState[keyPath: state].origin, ids: parentState[keyPath: state].ids)
            // Unchanged ids share their storage, so this is cheap for actions that leave the stack alone.
            if after.origin == before.origin && after.ids == before.ids { return .both(elementEffect, parentEffect) }
            let kept = after.origin == before.origin ? Set(after.ids) : []
            let gone = before.ids.filter { !kept.contains($0) }.map { Member(origin: before.origin, id: $0) }
            return .merge([elementEffect, parentEffect] + gone.map { .cancelEffects(ofChild: scope(of: $0)) })
        }

        /// An element as the stack's effects know it: which stack, and which element on it.
        @usableFromInline
        struct Member: Hashable {
            let origin: UInt64
            let id: StackElementID

            @usableFromInline
            init(origin: UInt64, id: StackElementID) {
                self.origin = origin
                self.id = id
            }
        }

        @inlinable
        func scope(of member: Member) -> EffectScope {
            EffectScope(keyPath: state, identity: member)
        }

        @inlinable
        func reduceElement(
            _ id: StackElementID,
            _ elementAction: Destination.Action,
            in parentState: inout Parent.State
        ) -> Effect<Parent.Action> {
            let origin = parentState[keyPath: state].origin
            let effect = parentState[keyPath: state].modify(id: id) { element in
                destination(&element, elementAction)
            }
            guard let effect else {
                location.report(
                    """
                    A "forEach" at \(location) received an action for element \(id), which is not on \
                    the stack:
                      \(elementAction)
                    Its effects are cancelled when it is popped; an action that can arrive late has to \
                    be ignored.
                    """
                )
                return .none
            }
            if effect.isNone { return .none }
            let embed = UncheckedBox(action)
            let scope = scope(of: Member(origin: origin, id: id))
            return
                effect
                .map { embed.value.embed(.element(id: id, action: $0)) }
                .scoped(to: scope)
                .cancellable(withChild: scope)
        }
    }
}
