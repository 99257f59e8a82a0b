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
    ///     so at most one runs at a time (a subscription restarted, a search debounced). `.none`
    ///     starts nothing, so it cancels nothing either, as in TCA: use ``cancel(id:)`` for that.
    public func cancellable(id: some Hashable & Sendable, cancelInFlight: Bool = false) -> Self {
        if isNone { return self }
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
    @usableFromInline
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
        case .throttle(let id, let decide):
            return Self(.throttle(id: id.scoped(to: scope)) { decide(&$0).scoped(to: scope) })
        }
    }
}

/// One step down the feature tree: the key path of a child's state and the identity of the
/// child there (an element's id, or which child an optional or enum holds).
///
/// `@unchecked Sendable`: made only from key paths and `Hashable & Sendable` values, which are
/// immutable.
@usableFromInline
struct EffectScope: Hashable, @unchecked Sendable {
    let keyPath: AnyKeyPath
    let identity: AnyHashable

    @usableFromInline
    init(keyPath: AnyKeyPath, identity: AnyHashable) {
        self.keyPath = keyPath
        self.identity = identity
    }
}

/// A cancellation id, type-erased, with the place in the feature tree it was used at.
///
/// `@unchecked Sendable`: it is only built from `Hashable & Sendable` values and scopes.
struct EffectID: Hashable, @unchecked Sendable {
    let base: AnyHashable
    /// The scopes from the root store's reducer down to the feature that used the id.
    let path: [EffectScope]
    /// Whether a `.cancel(id:)` of this id from a feature above reaches it (every id a feature
    /// names), or only one at its own place (the marker of a child's effects).
    let isReachedFromAbove: Bool

    init(_ base: some Hashable & Sendable, path: [EffectScope] = []) {
        self.init(base: AnyHashable(base), path: path, isReachedFromAbove: true)
    }

    /// The id every effect of the child at `scope` (an `ifLet` child, a `forEach` element)
    /// carries, so that removing the child cancels them all. Only the child's own parent reaches
    /// it: removing element 5 at the root leaves element 5 of some element's children alone.
    static func effects(ofChild scope: EffectScope) -> EffectID {
        EffectID(base: AnyHashable(scope), path: [], isReachedFromAbove: false)
    }

    private init(base: AnyHashable, path: [EffectScope], isReachedFromAbove: Bool) {
        self.base = base
        self.path = path
        self.isReachedFromAbove = isReachedFromAbove
    }

    /// This id one level down the feature tree.
    func scoped(to scope: EffectScope) -> EffectID {
        EffectID(base: base, path: [scope] + path, isReachedFromAbove: isReachedFromAbove)
    }

    /// Whether a `.cancel` of this id reaches the work under `other`: the same id, or (for an id
    /// reached from above) the same id further down the tree, or (for a child's marker) anything
    /// of that child.
    func covers(_ other: EffectID) -> Bool {
        if !isReachedFromAbove, let scope = base.base as? EffectScope {
            return other.path.contains(scope)
        }
        return other.cancellationKeys.contains(self)
    }

    /// The keys a task carrying this id is found under: the id at its own place and, when it is
    /// reached from above, at every ancestor's.
    var cancellationKeys: [EffectID] {
        guard isReachedFromAbove else { return [self] }
        return (0...path.count).map { EffectID(base: base, path: Array(path.prefix($0)), isReachedFromAbove: true) }
    }
}

extension Effect {
    /// The effect, cancelled with the child at `scope` (see ``EffectID/effects(ofChild:)``).
    @usableFromInline
    func cancellable(withChild scope: EffectScope) -> Self {
        if isNone { return self }
        return Self(.cancellable(id: .effects(ofChild: scope), cancelInFlight: false, effect: self))
    }

    /// Cancels the effects of the child at `scope`, which went away.
    @usableFromInline
    static func cancelEffects(ofChild scope: EffectScope) -> Self {
        Self(.cancel(id: .effects(ofChild: scope)))
    }
}
