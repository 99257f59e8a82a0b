import CasePaths
import IdentifiedCollections

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
    public func forEach<ElementState, ElementAction: Sendable, ID: Hashable & Sendable, Element: Reducer>(
        _ state: WritableKeyPath<State, IdentifiedArray<ID, ElementState>>,
        action: CaseKeyPath<Action, IdentifiedAction<ID, ElementAction>>,
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
            action: AnyCasePath(action),
            location: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        )
    }
}

/// A parent reducer with a feature per element of an `IdentifiedArray`; see
/// ``Reducer/forEach(_:action:element:fileID:filePath:line:column:)``.
public struct ForEachReducer<Parent: Reducer, ID: Hashable & Sendable, Element: Reducer>: Reducer {
    let parent: (inout Parent.State, Parent.Action) -> Effect<Parent.Action>
    let element: (inout Element.State, Element.Action) -> Effect<Element.Action>
    let state: WritableKeyPath<Parent.State, IdentifiedArray<ID, Element.State>>
    let action: AnyCasePath<Parent.Action, IdentifiedAction<ID, Element.Action>>
    let location: SourceLocation

    public func reduce(into parentState: inout Parent.State, action parentAction: Parent.Action) -> Effect<Parent.Action> {
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

    private func scope(of id: ID) -> EffectScope {
        EffectScope(keyPath: state, identity: id)
    }

    private func reduceElement(into parentState: inout Parent.State, action parentAction: Parent.Action) -> Effect<Parent.Action> {
        guard case .element(let id, let elementAction) = action.extract(from: parentAction) else { return .none }
        guard parentState[keyPath: state][id: id] != nil else {
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
        let effect = element(&parentState[keyPath: state][id: id]!, elementAction)
        if effect.isNone { return .none }
        let embed = UncheckedBox(action)
        return
            effect
            .map { embed.value.embed(.element(id: id, action: $0)) }
            .scoped(to: scope(of: id))
            .cancellable(withChild: scope(of: id))
    }
}
