import CasePaths
import IdentifiedCollections
import OrderedCollections

extension Reducer {
    /// Runs `element` on one element of a collection feature, for the parent's actions that
    /// carry an ``IdentifiedAction``, before this reducer.
    ///
    /// When this reducer removes an element, that element's running effects are cancelled (the
    /// effects the element returned for the action that removed it still run). Each element's
    /// cancellation ids are its own: one element's `.cancel(id:)` leaves the others' effects
    /// running, while the parent's `.cancel(id:)` of an id reaches every element's effects under
    /// that id too.
    ///
    /// ```swift
    /// Reduce { state, action in ... }
    ///     .forEach(\.sensors, action: \.sensors) { SensorRow() }
    /// ```
    @inlinable
    public func forEach<ElementState, ElementAction: Sendable, ID: Hashable & Sendable, Element: Reducer>(
        _ state: WritableKeyPath<State, IdentifiedArray<ID, ElementState>>,
        action: EnumCase<Action, IdentifiedAction<ID, ElementAction>>,
        @ReducerBuilder<ElementState, ElementAction> element: () -> Element,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) -> ForEachReducer<Self, ID, Element>
    where Action: CasePathable, Element.State == ElementState, Element.Action == ElementAction {
        ForEachReducer(
            parent: _reduceFunction,
            element: element()._reduceFunction,
            state: state,
            action: Action.casePath(action),
            location: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        )
    }
}

/// A parent reducer with a feature per element of an `IdentifiedArray`; see
/// ``Reducer/forEach(_:action:element:fileID:filePath:line:column:)``.
public struct ForEachReducer<Parent: Reducer, ID: Hashable & Sendable, Element: Reducer>: Reducer {
    @usableFromInline let run: (inout Parent.State, Parent.Action) -> Effect<Parent.Action>

    /// Built where `forEach` is called, so that the compiler specializes the code for the
    /// feature's own types there.
    @inlinable
    init(
        parent: @escaping (inout Parent.State, Parent.Action) -> Effect<Parent.Action>,
        element: @escaping (inout Element.State, Element.Action) -> Effect<Element.Action>,
        state: WritableKeyPath<Parent.State, IdentifiedArray<ID, Element.State>>,
        action: AnyCasePath<Parent.Action, IdentifiedAction<ID, Element.Action>>,
        location: SourceLocation
    ) {
        let steps = Steps(parent: parent, element: element, state: state, action: action, location: location)
        run = { steps.reduce(into: &$0, action: $1) }
    }

    /// Runs the parent reducer, and before it the element's reducer for the actions of an element still present.
    public func reduce(into state: inout Parent.State, action: Parent.Action) -> Effect<Parent.Action> {
        run(&state, action)
    }

    public var _reduceFunction: (inout Parent.State, Parent.Action) -> Effect<Parent.Action> { run }
}

extension ForEachReducer {
    @usableFromInline
    struct Steps {
        @usableFromInline let parent: (inout Parent.State, Parent.Action) -> Effect<Parent.Action>
        @usableFromInline let element: (inout Element.State, Element.Action) -> Effect<Element.Action>
        @usableFromInline let state: WritableKeyPath<Parent.State, IdentifiedArray<ID, Element.State>>
        @usableFromInline let action: AnyCasePath<Parent.Action, IdentifiedAction<ID, Element.Action>>
        @usableFromInline let location: SourceLocation

        @inlinable
        init(
            parent: @escaping (inout Parent.State, Parent.Action) -> Effect<Parent.Action>,
            element: @escaping (inout Element.State, Element.Action) -> Effect<Element.Action>,
            state: WritableKeyPath<Parent.State, IdentifiedArray<ID, Element.State>>,
            action: AnyCasePath<Parent.Action, IdentifiedAction<ID, Element.Action>>,
            location: SourceLocation
        ) {
            self.parent = parent
            self.element = element
            self.state = state
            self.action = action
            self.location = location
        }

        @inlinable
        func reduce(into parentState: inout Parent.State, action parentAction: Parent.Action) -> Effect<Parent.Action> {
            let elementEffect = reduceElement(into: &parentState, action: parentAction)
            let idsBefore = parentState[keyPath: state].ids
            let parentEffect = parent(&parentState, parentAction)
            let idsAfter = parentState[keyPath: state].ids
            // Ids the parent left alone share their storage, which makes this check cheap.
            guard idsAfter != idsBefore else { return .both(elementEffect, parentEffect) }
            let removed = idsBefore.subtracting(idsAfter)
            guard !removed.isEmpty else { return .both(elementEffect, parentEffect) }
            return .merge([elementEffect, parentEffect] + removed.map { Effect.cancelEffects(ofChild: scope(of: $0)) })
        }

        @inlinable
        func scope(of id: ID) -> EffectScope {
            EffectScope(keyPath: state, identity: id)
        }

        @inlinable
        func reduceElement(into parentState: inout Parent.State, action parentAction: Parent.Action) -> Effect<Parent.Action> {
            guard case .element(let id, let elementAction) = action.extract(from: parentAction) else { return .none }
            guard let index = parentState[keyPath: state].index(id: id) else {
                location.report(
                    """
                    A "forEach" at \(location) received an action for element \(id), which is not in \
                    the collection:
                      \(elementAction)
                    Cancel an element's effects when it is removed, or ignore actions that can arrive late.
                    """
                )
                return .none
            }
            let effect = element(&parentState[keyPath: state][index], elementAction)
            if effect.isNone { return .none }
            let embed = UncheckedBox(action)
            return
                effect
                .map { embed.value.embed(.element(id: id, action: $0)) }
                .scoped(to: scope(of: id))
                .cancellable(withChild: scope(of: id))
        }
    }
}
