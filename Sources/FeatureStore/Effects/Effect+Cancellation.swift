extension Effect {
    /// Makes the effect cancellable by `id` with ``cancel(id:)``.
    ///
    /// ```swift
    /// enum CancelID { case readings }
    ///
    /// case .startWatching:
    ///     return .run { send in
    ///         for await reading in readings() { await send(.readingChanged(reading)) }
    ///     }
    ///     .cancellable(id: CancelID.readings, cancelInFlight: true)
    /// case .stopWatching:
    ///     return .cancel(id: CancelID.readings)
    /// ```
    ///
    /// - Parameters:
    ///   - id: Any hashable value; effects of one store with equal ids are cancelled together.
    ///   - cancelInFlight: Cancels the effects already running under `id` before this one starts,
    ///     so at most one runs at a time (a subscription restarted, a search debounced).
    public func cancellable(id: some Hashable & Sendable, cancelInFlight: Bool = false) -> Self {
        if isNone && !cancelInFlight { return self }
        return Self(.cancellable(id: EffectID(id), cancelInFlight: cancelInFlight, effect: self))
    }

    /// Cancels every running effect of this store marked ``cancellable(id:cancelInFlight:)`` with
    /// `id`. Actions they try to send after this are ignored.
    public static func cancel(id: some Hashable & Sendable) -> Self {
        Self(.cancel(id: EffectID(id)))
    }
}

extension Effect {
    /// The same effect with every cancellation id it uses (in ``cancellable(id:cancelInFlight:)``
    /// and ``cancel(id:)``) made private to `scope`: how `ifLet` and `forEach` keep one child's
    /// `.cancel(id:)` from cancelling another child's effects.
    func scopingIDs(to scope: EffectID) -> Self {
        switch operation {
        case .none, .send, .run: self
        case .merge(let effects): Self(.merge(effects.map { $0.scopingIDs(to: scope) }))
        case .concatenate(let effects): Self(.concatenate(effects.map { $0.scopingIDs(to: scope) }))
        case .cancellable(let id, let cancelInFlight, let effect):
            Self(.cancellable(id: id.scoped(to: scope), cancelInFlight: cancelInFlight, effect: effect.scopingIDs(to: scope)))
        case .cancel(let id): Self(.cancel(id: id.scoped(to: scope)))
        }
    }
}

/// A cancellation id, type-erased.
///
/// `@unchecked Sendable`: it is only built from `Hashable & Sendable` values.
struct EffectID: Hashable, @unchecked Sendable {
    let base: AnyHashable

    init(_ base: some Hashable & Sendable) {
        self.base = AnyHashable(base)
    }

    /// For ids the runtime makes of values that are immutable but not declared `Sendable`, such
    /// as key paths.
    init(unchecked base: some Hashable) {
        self.base = AnyHashable(base)
    }

    /// This id, private to `scope`.
    func scoped(to scope: EffectID) -> EffectID {
        EffectID(unchecked: [base, scope.base])
    }
}
