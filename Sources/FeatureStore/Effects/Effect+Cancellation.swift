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
    /// The same effect one level down the feature tree, under `scope` (an `ifLet` child or a
    /// `forEach` element): its cancellation ids and its tasks get `scope` at the front of their
    /// path. So a child's `.cancel(id:)` reaches only its own effects and its descendants', while
    /// the parent's `.cancel(id:)` of the same id reaches the child's too, as in TCA.
    func scoped(to scope: EffectScope) -> Self {
        switch operation {
        case .none, .send:
            return self
        case .run(var run):
            run.path.insert(scope, at: 0)
            return Self(.run(run))
        case .merge(let effects):
            return Self(.merge(effects.map { $0.scoped(to: scope) }))
        case .concatenate(let effects):
            return Self(.concatenate(effects.map { $0.scoped(to: scope) }))
        case .cancellable(let id, let cancelInFlight, let effect):
            return Self(.cancellable(id: id.scoped(to: scope), cancelInFlight: cancelInFlight, effect: effect.scoped(to: scope)))
        case .cancel(let id):
            return Self(.cancel(id: id.scoped(to: scope)))
        }
    }
}

/// One step down the feature tree: the key path of a child's state and the identity of the
/// child there (an element's id, or which child an optional or enum holds).
///
/// `@unchecked Sendable`: made only from key paths and `Hashable & Sendable` values, which are
/// immutable.
struct EffectScope: Hashable, @unchecked Sendable {
    let keyPath: AnyKeyPath
    let identity: AnyHashable
}

/// A cancellation id, type-erased, with the place in the feature tree it was used at.
///
/// `@unchecked Sendable`: it is only built from `Hashable & Sendable` values and scopes.
struct EffectID: Hashable, @unchecked Sendable {
    let base: AnyHashable
    /// The scopes from the root store's reducer down to the feature that used the id.
    let path: [EffectScope]

    init(_ base: some Hashable & Sendable, path: [EffectScope] = []) {
        self.base = AnyHashable(base)
        self.path = path
    }

    /// This id one level down the feature tree.
    func scoped(to scope: EffectScope) -> EffectID {
        EffectID(base: base, path: [scope] + path)
    }

    private init(base: AnyHashable, path: [EffectScope]) {
        self.base = base
        self.path = path
    }

    /// The keys a task carrying this id is found under: the id at its own place and at every
    /// ancestor's, so that a `.cancel(id:)` from any feature above reaches it. A child's marker
    /// (``ChildEffects``) is found only at its own place: removing element 5 at the root must not
    /// cancel the effects of element 5 of some element's own children.
    var cancellationKeys: [EffectID] {
        if base.base is ChildEffects { return [self] }
        return (0...path.count).map { EffectID(base: base, path: Array(path.prefix($0))) }
    }
}

/// The marker id every effect of one child (one `ifLet` child or `forEach` element) carries, so
/// that removing the child cancels them all.
struct ChildEffects: Hashable, Sendable {
    let scope: EffectScope
}
