import Dependencies

/// The state, reducer and effects behind a root ``Store`` and every store scoped from it.
///
/// Actions are reduced one at a time on the main actor. An action sent while another is being
/// reduced (by an effect's `.send`) waits in a buffer and is reduced right after, in order.
@MainActor
final class StoreCore<State, Action: Sendable> {
    private(set) var state: State
    private let reduce: (inout State, Action) -> Effect<Action>
    private let dependencies: DependencyValues
    let effects = EffectTasks()
    private let location: SourceLocation

    private var buffer: [Action] = []
    private var isReducing = false
    private var observers: [Int: @MainActor () -> Void] = [:]
    private var finishers: [Int: @MainActor () -> Void] = [:]
    private var nextObserver = 0
    private(set) var isShutDown = false

    init(
        initialState: State,
        reduce: @escaping (inout State, Action) -> Effect<Action>,
        dependencies: DependencyValues,
        location: SourceLocation
    ) {
        self.state = initialState
        self.reduce = reduce
        self.dependencies = dependencies
        self.location = location
    }

    isolated deinit {
        effects.shutDown()
        for finish in finishers.values { finish() }
    }

    func send(_ action: Action) -> StoreTask {
        guard !isShutDown else {
            location.report(
                """
                An action was sent to a store that has shut down, and was ignored:
                  \(action)
                The store was made at \(location).
                """
            )
            return StoreTask(tasks: [])
        }
        buffer.append(action)
        guard !isReducing else { return StoreTask(tasks: []) }
        isReducing = true
        defer { isReducing = false }

        var tasks: [Task<Void, Never>] = []
        DependencyValues.$_current.withValue(dependencies) {
            var index = 0
            while index < buffer.count {
                let next = buffer[index]
                index += 1
                let effect = reduce(&state, next)
                if !effect.isNone { launch(effect, ids: [], into: &tasks) }
            }
        }
        buffer.removeAll(keepingCapacity: true)
        if !observers.isEmpty {
            for observer in observers.values { observer() }
        }
        return StoreTask(tasks: tasks)
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

    /// Starts an effect's tasks, each cancellable by `ids`; `.send` actions join the buffer.
    private func launch(_ effect: Effect<Action>, ids: [EffectID], into tasks: inout [Task<Void, Never>]) {
        switch effect.operation {
        case .none:
            break
        case .send(let action):
            buffer.append(action)
        case .run(let priority, let body):
            let send = Send<Action> { [weak self] action in _ = self?.send(action) }
            if let task = effects.start(priority: priority, ids: ids, operation: { await body(send) }) {
                tasks.append(task)
            }
        case .merge(let effects):
            for effect in effects { launch(effect, ids: ids, into: &tasks) }
        case .concatenate(let sequence):
            let operation: @Sendable () async -> Void = { [weak self] in
                for effect in sequence {
                    guard !Task.isCancelled, let self else { return }
                    await self.runToCompletion(effect, ids: ids)
                }
            }
            if let task = effects.start(priority: nil, ids: ids, operation: operation) { tasks.append(task) }
        case .cancellable(let id, let cancelInFlight, let effect):
            if cancelInFlight { effects.cancel(id: id) }
            launch(effect, ids: ids + [id], into: &tasks)
        case .cancel(let id):
            effects.cancel(id: id)
        }
    }

    /// Starts `effect` and returns when all its tasks have finished (for `.concatenate`).
    private func runToCompletion(_ effect: Effect<Action>, ids: [EffectID]) async {
        // Checked here, on the main actor: a `.cancel(id:)` reduced since the hop wins.
        guard !Task.isCancelled, !isShutDown else { return }
        var tasks: [Task<Void, Never>] = []
        DependencyValues.$_current.withValue(dependencies) {
            launch(effect, ids: ids, into: &tasks)
        }
        // A `.send` inside a concatenation is reduced now, in its turn; the effects of the
        // actions it sends are theirs, not the concatenation's, so they are not awaited.
        if !buffer.isEmpty && !isReducing {
            let pending = buffer
            buffer.removeAll()
            for action in pending { _ = send(action) }
        }
        await StoreTask(tasks: tasks).finish()
    }
}
