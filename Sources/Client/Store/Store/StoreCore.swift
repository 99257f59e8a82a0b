import Dependencies
import Synchronization

/// The state, reducer and effects behind a root ``Store`` and every store scoped from it.
///
/// Actions are reduced one at a time on the main actor. An action sent while another is being
/// reduced (by an effect's `.send`) waits in a buffer and is reduced right after, in order.
@MainActor
final class StoreCore<State, Action: Sendable> {
    private(set) var state: State
    private let reduce: (inout State, Action) -> Effect<Action>
    /// What reducers see while they run; effects capture what was in effect where they were made.
    var dependencies: DependencyValues
    let effects = EffectTasks()
    private let location: SourceLocation
    /// The feature's name for ``EffectOrigin``: its reducer's type name.
    private let feature: String

    /// Actions waiting to be reduced, each with the group its effects join (nil: the group of
    /// the `send` that reduces it, made when it is first needed).
    private var buffer: [(action: Action, group: EffectGroup?)] = []
    private var isReducing = false
    /// What throttled effects left behind, per id: when the last one started (see
    /// ``Effect/throttle(id:for:clock:latest:fileID:filePath:line:column:)``).
    private var throttles: [EffectID: any Sendable] = [:]
    private var observers: [Int: @MainActor () -> Void] = [:]
    private var finishers: [Int: @MainActor () -> Void] = [:]
    private var nextObserver = 0
    private(set) var isShutDown = false

    init(
        initialState: State,
        reduce: @escaping (inout State, Action) -> Effect<Action>,
        dependencies: DependencyValues,
        location: SourceLocation,
        feature: String = ""
    ) {
        self.state = initialState
        self.reduce = reduce
        self.dependencies = dependencies
        self.location = location
        self.feature = feature
    }

    isolated deinit {
        effects.shutDown()
        for finish in finishers.values { finish() }
    }

    /// Reduces `action` (and the actions its `.send` effects buffer), then starts the effects.
    ///
    /// - Parameter origin: The group of the effect that sent `action`, which its own effects
    ///   join, so that awaiting the first `send` awaits what followed from it.
    func send(_ action: Action, originatingFrom origin: EffectGroup? = nil) -> StoreTask {
        guard !isShutDown else {
            location.report(
                """
                An action was sent to a store that has shut down, and was ignored:
                  \(action)
                The store was made at \(location).
                """
            )
            return StoreTask(group: nil)
        }
        // Effects reach the buffer directly and observers run after reducing, so a `send` while
        // reducing comes from inside a reducer.
        if isReducing {
            location.report(
                """
                An action was sent to the store while its reducer was running:
                  \(action)
                A reducer must not call `send`: return `.send(action)` from it instead. The action \
                is reduced after the current one.
                """
            )
            buffer.append((action, origin))
            return StoreTask(group: origin)
        }
        isReducing = true
        var group = origin
        DependencyValues.$_current.withValue(dependencies) {
            // The action itself, then what its `.send` effects buffered, in order.
            var next: (action: Action, group: EffectGroup?)? = (action, origin)
            var index = 0
            while let current = next {
                let effect = reduce(&state, current.action)
                if !effect.isNone {
                    let target: EffectGroup
                    if let own = current.group {
                        target = own
                    } else if let group {
                        target = group
                    } else {
                        target = EffectGroup()
                        group = target
                    }
                    _ = run(effect, in: target) { EffectOrigin(feature: feature, action: current.action) }
                }
                if index < buffer.count {
                    next = buffer[index]
                    index += 1
                } else {
                    next = nil
                }
            }
            if !buffer.isEmpty { buffer.removeAll(keepingCapacity: true) }
        }
        isReducing = false
        if !observers.isEmpty {
            for observer in observers.values { observer() }
        }
        return StoreTask(group: group)
    }

    /// Cancels every effect and ignores later actions.
    func shutDown() {
        isShutDown = true
        effects.shutDown()
        let finishers = self.finishers
        self.finishers = [:]
        observers = [:]
        for finish in finishers.values { finish() }
    }

    /// Calls `observer` after every ``send(_:)``, and `finish` once when the store shuts down or
    /// goes away; returns the key that removes both.
    func addObserver(_ observer: @escaping @MainActor () -> Void, finish: @escaping @MainActor () -> Void) -> Int {
        let key = nextObserver
        nextObserver += 1
        if isShutDown {
            finish()
            return key
        }
        observers[key] = observer
        finishers[key] = finish
        return key
    }

    func removeObserver(_ key: Int) {
        observers[key] = nil
        finishers[key] = nil
    }

    /// What an effect asks the store to start once the action's cancellations are applied.
    private enum Launch {
        case run(Effect<Action>.Run, ids: [EffectID])
        case sequence([Effect<Action>], ids: [EffectID])
        case cancelInFlight(EffectID)
    }

    /// Runs one action's effect: first everything that needs no task (its `.cancel(id:)`s, and
    /// its `.send`s into the buffer), then its tasks. So an action's own `.cancel(id:)` never
    /// cancels the work the same action starts (a row's delete request survives the parent
    /// removing the row for that action), as in TCA.
    ///
    /// - Returns: The tasks started.
    private func run(
        _ effect: Effect<Action>,
        in group: EffectGroup,
        ids: [EffectID] = [],
        origin: () -> EffectOrigin?
    ) -> [Task<Void, Never>] {
        var launches: [Launch] = []
        plan(effect, ids: ids, group: group, into: &launches)
        // Made only when a task starts: most actions start none.
        guard !launches.isEmpty else { return [] }
        let origin = origin()
        return launches.compactMap { start($0, in: group, origin: origin) }
    }

    private func plan(_ effect: Effect<Action>, ids: [EffectID], group: EffectGroup, into launches: inout [Launch]) {
        switch effect.operation {
        case .none:
            break
        case .send(let action):
            buffer.append((action, group))
        case .run(let run):
            launches.append(.run(run, ids: ids))
        case .merge(let effects):
            for effect in effects { plan(effect, ids: ids, group: group, into: &launches) }
        case .concatenate(let sequence):
            // What needs no task takes effect now, in order; the rest runs as one task.
            let synchronous = sequence.prefix(while: \.isSynchronous)
            for effect in synchronous { plan(effect, ids: ids, group: group, into: &launches) }
            if synchronous.count < sequence.count {
                launches.append(.sequence(Array(sequence.dropFirst(synchronous.count)), ids: ids))
            }
        case .cancellable(let id, let cancelInFlight, let effect):
            if cancelInFlight { launches.append(.cancelInFlight(id)) }
            plan(effect, ids: ids + [id], group: group, into: &launches)
        case .cancel(let id):
            effects.cancel(id: id)
            // A cancelled throttle starts afresh; a child that went away leaves nothing behind.
            if !throttles.isEmpty { throttles = throttles.filter { !id.covers($0.key) } }
        case .throttle(let id, let decide):
            var record = throttles[id]
            let effect = decide(&record)
            throttles[id] = record
            plan(effect, ids: ids, group: group, into: &launches)
        }
    }

    private func start(_ launch: Launch, in group: EffectGroup, origin: EffectOrigin?) -> Task<Void, Never>? {
        let task: Task<Void, Never>?
        switch launch {
        case .cancelInFlight(let id):
            effects.cancel(id: id)
            return nil
        case .run(let run, let ids):
            let completion = EffectCompletion()
            let location = self.location
            let send = Send<Action> { [weak self] action in
                if completion.isFinished {
                    (run.location ?? location).report(
                        """
                        An action was sent from an effect that had already finished:
                          \(action)
                        Call `send` only while the effect's work runs; a callback that keeps it and \
                        calls it later delivers actions that nothing awaits or cancels.
                        """
                    )
                }
                _ = self?.send(action, originatingFrom: group)
            }
            task = effects.start(
                priority: run.priority,
                name: run.name,
                ids: ids,
                path: run.path,
                description: EffectDescription(location: run.location, name: run.name),
                origin: origin
            ) {
                await run.body(send)
                completion.finish()
            }
        case .sequence(let sequence, let ids):
            task = effects.start(
                priority: nil,
                name: nil,
                ids: ids,
                path: [],
                description: EffectDescription(location: sequence.lazy.compactMap(\.location).first, name: nil),
                origin: origin
            ) { [weak self] in
                for effect in sequence {
                    guard !Task.isCancelled, let self else { return }
                    await self.runToCompletion(effect, ids: ids, group: group)
                }
            }
        }
        if let task { group.add(task) }
        return task
    }

    /// Runs `effect` and returns when all its tasks have finished (for `.concatenate`).
    private func runToCompletion(_ effect: Effect<Action>, ids: [EffectID], group: EffectGroup) async {
        // Checked here, on the main actor: a `.cancel(id:)` reduced since the hop wins.
        guard !Task.isCancelled, !isShutDown else { return }
        let tasks = run(effect, in: group, ids: ids) { EffectOrigin.current }
        // A `.send` inside a concatenation is reduced now, in its turn; the effects of the
        // actions it sends join the group but are not awaited here.
        if !buffer.isEmpty && !isReducing {
            let pending = buffer
            buffer.removeAll()
            for next in pending { _ = send(next.action, originatingFrom: next.group) }
        }
        for task in tasks { await task.value }
    }
}

/// Whether an effect's work has returned, so a `send` it kept and calls later can be reported.
private final class EffectCompletion: Sendable {
    private let finished = Atomic(false)

    var isFinished: Bool { finished.load(ordering: .acquiring) }

    func finish() {
        finished.store(true, ordering: .releasing)
    }
}
