extension Reducer {
    /// Runs `reducer` after this one whenever an action changed the value `toValue` reads from the
    /// state, with the value before and after.
    ///
    /// ```swift
    /// Reduce { state, action in ... }
    ///     .onChange(of: \.target) { oldTarget, newTarget in
    ///         Reduce { state, _ in
    ///             state.log.append("target \(oldTarget) → \(newTarget)")
    ///             return .run { _ in try await thermostat.retune(newTarget) }
    ///         }
    ///     }
    /// ```
    ///
    /// The effects of both reducers run.
    public func onChange<Value: Equatable, Changed: Reducer>(
        of toValue: @escaping (State) -> Value,
        @ReducerBuilder<State, Action> _ reducer: @escaping (_ oldValue: Value, _ newValue: Value) -> Changed
    ) -> OnChangeReducer<Self, Value, Changed> where Changed.State == State, Changed.Action == Action {
        OnChangeReducer(base: _reduceFunction, toValue: toValue, reducer: reducer)
    }
}

/// A reducer that runs another when a value of its state changes; see
/// ``Reducer/onChange(of:_:)``.
public struct OnChangeReducer<Base: Reducer, Value: Equatable, Changed: Reducer>: Reducer
where Changed.State == Base.State, Changed.Action == Base.Action {
    let base: (inout Base.State, Base.Action) -> Effect<Base.Action>
    let toValue: (Base.State) -> Value
    let reducer: (Value, Value) -> Changed

    /// Runs the base reducer, then the change reducer when the observed value changed.
    public func reduce(into state: inout Base.State, action: Base.Action) -> Effect<Base.Action> {
        let oldValue = toValue(state)
        let baseEffect = base(&state, action)
        let newValue = toValue(state)
        guard oldValue != newValue else { return baseEffect }
        return .merge(baseEffect, reducer(oldValue, newValue).reduce(into: &state, action: action))
    }
}
