import CasePaths
import Dependencies

/// Runs a feature: holds its state, reduces the actions sent to it, and runs the effects.
///
/// ```swift
/// let store = Store(initialState: Thermostat.State()) {
///     Thermostat()
/// } withDependencies: {
///     $0.sharedState = client
/// }
/// store.send(.start)
/// for await state in store.states { print(state.heater) }
/// ```
///
/// The store lives on the main actor and reduces one action at a time. Its effects run as tasks
/// that are cancelled when the store goes away (or ``shutDown()`` is called). A store made with
/// ``scope(state:action:)`` shows part of its parent's state and sends its actions through the
/// parent.
@MainActor
@dynamicMemberLookup
public final class Store<State, Action: Sendable> {
    private let core: AnyObject
    private let readState: @MainActor () -> State
    private let sendAction: @MainActor (Action) -> StoreTask
    private let observe: @MainActor (@escaping @MainActor () -> Void, @escaping @MainActor () -> Void) -> Int
    private let stopObserving: @MainActor (Int) -> Void
    let effects: EffectTasks
    private let shutDownCore: @MainActor () -> Void
    private let readDependencies: @MainActor () -> DependencyValues
    private let writeDependencies: @MainActor (DependencyValues) -> Void

    /// Creates a store that runs `reducer` from `initialState`.
    ///
    /// - Parameters:
    ///   - prepareDependencies: Overrides dependencies for this store and its effects, on
    ///     top of those in effect where the store is made.
    ///   - initialState: The state the feature starts in.
    ///   - reducer: The feature's reducer.
    ///   - fileID: The file of the call, where a failure is reported (the caller's by default).
    ///   - filePath: The full path of that file (the caller's by default).
    ///   - line: The line of the call (the caller's by default).
    ///   - column: The column of the call (the caller's by default).
    public init<R: Reducer>(
        initialState: State,
        @ReducerBuilder<State, Action> reducer: () -> R,
        withDependencies prepareDependencies: (inout DependencyValues) -> Void = { _ in },
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) where R.State == State, R.Action == Action {
        var dependencies = DependencyValues._current
        prepareDependencies(&dependencies)
        // Built once, with the store's dependencies: the reducer, and the bodies it is made of.
        let reduce = DependencyValues.$_current.withValue(dependencies) { reducer()._reduceFunction }
        let core = StoreCore<State, Action>(
            initialState: initialState,
            reduce: reduce,
            dependencies: dependencies,
            location: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column),
            feature: String(describing: R.self)
        )
        // The closures hold the core weakly (every store holds it strongly through `core`), so
        // an observer registered with the core does not keep it alive.
        self.core = core
        self.readState = { [unowned core] in core.state }
        self.sendAction = { [unowned core] in core.send($0) }
        self.observe = { [weak core] in core?.addObserver($0, finish: $1) ?? -1 }
        self.stopObserving = { [weak core] in core?.removeObserver($0) }
        self.effects = core.effects
        self.shutDownCore = { [weak core] in core?.shutDown() }
        self.readDependencies = { [unowned core] in core.dependencies }
        self.writeDependencies = { [unowned core] in core.dependencies = $0 }
    }

    private init(
        core: AnyObject,
        readState: @escaping @MainActor () -> State,
        sendAction: @escaping @MainActor (Action) -> StoreTask,
        observe: @escaping @MainActor (@escaping @MainActor () -> Void, @escaping @MainActor () -> Void) -> Int,
        stopObserving: @escaping @MainActor (Int) -> Void,
        effects: EffectTasks,
        shutDownCore: @escaping @MainActor () -> Void,
        readDependencies: @escaping @MainActor () -> DependencyValues,
        writeDependencies: @escaping @MainActor (DependencyValues) -> Void
    ) {
        self.core = core
        self.readState = readState
        self.sendAction = sendAction
        self.observe = observe
        self.stopObserving = stopObserving
        self.effects = effects
        self.shutDownCore = shutDownCore
        self.readDependencies = readDependencies
        self.writeDependencies = writeDependencies
    }

    /// The current state.
    public var state: State { readState() }

    /// Reads part of the current state: `store.heater.mode`.
    public subscript<Value>(dynamicMember keyPath: KeyPath<State, Value>) -> Value {
        readState()[keyPath: keyPath]
    }

    /// Reduces `action` now, and starts its effects.
    ///
    /// - Returns: The effects started, to await with ``StoreTask/finish()`` or cancel; they
    ///   include the effects of the actions those effects send back.
    @discardableResult
    public func send(_ action: Action) -> StoreTask {
        sendAction(action)
    }

    /// A store for a child feature: its state is the parent's at `state`, and its actions are
    /// sent to the parent embedded by `action`.
    public func scope<ChildState, ChildAction: Sendable>(
        state: KeyPath<State, ChildState>,
        action: EnumCase<Action, ChildAction>
    ) -> Store<ChildState, ChildAction> where Action: CasePathable {
        let readState = self.readState
        let sendAction = self.sendAction
        let embed = Action.casePath(action)
        return Store<ChildState, ChildAction>(
            core: core,
            readState: { readState()[keyPath: state] },
            sendAction: { sendAction(embed.embed($0)) },
            observe: observe,
            stopObserving: stopObserving,
            effects: effects,
            shutDownCore: shutDownCore,
            readDependencies: readDependencies,
            writeDependencies: writeDependencies
        )
    }

    /// The dependencies reducers see from now on, and the effects they return capture.
    var dependencies: DependencyValues {
        get { readDependencies() }
        set { writeDependencies(newValue) }
    }

    /// How many effects are running.
    public var runningEffects: Int { effects.count }

    /// How many effects were started but have not begun to execute.
    var effectsNotYetRunning: Int { effects.notYetRunning }

    /// Returns once no effect is running: a feature that finished its work.
    public func waitUntilIdle() async {
        await effects.waitUntilIdle()
    }

    /// A function that returns once no effect is running, callable from any task.
    public func idleWaiter() -> @Sendable () async -> Void {
        let effects = self.effects
        return { await effects.waitUntilIdle() }
    }

    /// Cancels the running effects; new ones may start.
    func cancelAllEffects() {
        effects.cancelAll()
    }

    /// Cancels every effect and ignores later actions (reporting each as an issue). The root
    /// store and every scoped store share this.
    public func shutDown() {
        shutDownCore()
    }
}

extension Store where State: Equatable & Sendable {
    /// The current state, then every state that differs from the one before.
    ///
    /// A slow reader sees the latest state and may skip intermediate ones. The stream ends when
    /// the store shuts down or goes away, or when its reader stops iterating.
    public var states: AsyncStream<State> {
        let (stream, continuation) = AsyncStream.makeStream(of: State.self, bufferingPolicy: .bufferingNewest(1))
        var last = readState()
        continuation.yield(last)
        let readState = self.readState
        let key = observe(
            {
                let current = readState()
                guard current != last else { return }
                last = current
                continuation.yield(current)
            },
            { continuation.finish() }
        )
        let stopObserving = self.stopObserving
        continuation.onTermination = { _ in
            // The stream may end on any thread and the observers live on the main actor; until
            // this runs, the finished continuation ignores what the observer yields.
            Task { @MainActor in stopObserving(key) }
        }
        return stream
    }
}
