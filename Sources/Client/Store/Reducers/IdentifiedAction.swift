import CasePaths

/// An action of one element of a collection feature: which element, and what happened to it.
///
/// ```swift
/// @CasePathable enum Action: Sendable {
///     case sensors(IdentifiedActionOf<SensorRow>)
/// }
/// store.send(.sensors(.element(id: "kitchen", action: .selected)))
/// ```
@CasePathable
public enum IdentifiedAction<ID: Hashable & Sendable, Action: Sendable>: Sendable {
    /// `action` happened to the element identified by `id`.
    case element(id: ID, action: Action)
}

extension IdentifiedAction: Equatable where Action: Equatable {}
extension IdentifiedAction: Hashable where Action: Hashable {}

/// The ``IdentifiedAction`` of a reducer whose state is `Identifiable`.
public typealias IdentifiedActionOf<R: Reducer> = IdentifiedAction<R.State.ID, R.Action>
where R.State: Identifiable, R.State.ID: Sendable
