import Dependencies

extension Reducer {
    /// Runs this reducer, and the effects it returns, with one dependency set to `value`.
    ///
    /// ```swift
    /// Scope(state: \.preview, action: \.preview) {
    ///     Thermostat().dependency(\.sharedState, InMemorySharedState())
    /// }
    /// ```
    public func dependency<Value>(
        _ keyPath: WritableKeyPath<DependencyValues, Value> & Sendable,
        _ value: Value
    ) -> DependencyModifier<Self> {
        let value = UncheckedBox(value)
        return DependencyModifier(base: self) { $0[keyPath: keyPath] = value.value }
    }

    /// Runs this reducer, and the effects it returns, with one dependency changed by `transform`.
    ///
    /// ```swift
    /// Child().transformDependency(\.logger) { $0[metadataKey: "feature"] = "child" }
    /// ```
    public func transformDependency<Value>(
        _ keyPath: WritableKeyPath<DependencyValues, Value> & Sendable,
        transform: @escaping (inout Value) -> Void
    ) -> DependencyModifier<Self> {
        DependencyModifier(base: self) { transform(&$0[keyPath: keyPath]) }
    }
}

/// A reducer run with some dependencies changed; see ``Reducer/dependency(_:_:)``.
public struct DependencyModifier<Base: Reducer>: Reducer {
    let base: (inout Base.State, Base.Action) -> Effect<Base.Action>
    let update: (inout DependencyValues) -> Void

    /// `base`, its body built with the changed dependencies in force.
    init(base: Base, update: @escaping (inout DependencyValues) -> Void) {
        self.base = withDependencies(update) { base._reduceFunction }
        self.update = update
    }

    /// Runs the base reducer, and the effects it returns, with the dependencies changed.
    public func reduce(into state: inout Base.State, action: Base.Action) -> Effect<Base.Action> {
        withDependencies(update) {
            base(&state, action)
        }
    }
}
