import CasePaths

/// What happens to a navigation stack of child features: an action of one element, a push, or a
/// pop of an element and everything above it.
///
/// ```swift
/// @CasePathable enum Action: Sendable {
///     case path(StackActionOf<Path>)
/// }
/// store.send(.path(.element(id: 0, action: .sensor(.refresh))))
/// store.send(.path(.popFrom(id: 0)))
/// ```
@CasePathable
public enum StackAction<State: Sendable, Action: Sendable>: Sendable {
    /// `action` happened to the element `id`.
    case element(id: StackElementID, action: Action)
    /// Removes the element `id` and every element above it, after the parent has reduced this
    /// action (so the parent still sees them).
    case popFrom(id: StackElementID)
    /// Pushes `state` as element `id`, after the parent has reduced this action. `id` must not be
    /// on the stack; ``StackState/nextID`` is the id the stack would give it.
    case push(id: StackElementID, state: State)
}

extension StackAction: Equatable where State: Equatable, Action: Equatable {}
extension StackAction: Hashable where State: Hashable, Action: Hashable {}

/// The ``StackAction`` of a navigation stack of `R`'s features.
public typealias StackActionOf<R: Reducer> = StackAction<R.State, R.Action> where R.State: Sendable
