import SharedState

/// The panel: a root store with a navigation stack of screens (``PanelPath``), each its own
/// feature, pushed and popped by requests other processes publish under
/// `climate/panel/requests/` (the seeds' navigation publisher, across processes).
///
/// Each request is applied exactly once, in the order requests were created: the panel saves
/// its new stack at `climate/panel/screen` and deletes the request in one transaction, and only
/// then pushes or pops. After a restart it loads the saved stack first, so a request applied
/// before the restart is neither lost nor applied again.
///
/// It starts one watch at a time (the heater, then the requests), so that its start-up runs in
/// one order and its tests can say which.
public struct Panel: Reducer, Sendable {
    /// A request waiting to be applied: one version of one request key.
    public struct Pending: Equatable, Sendable {
        public var key: String
        public var version: UInt64
        public var createRevision: UInt64
        public var request: PanelRequest

        public init(key: String, version: UInt64, createRevision: UInt64, request: PanelRequest) {
            self.key = key
            self.version = version
            self.createRevision = createRevision
            self.request = request
        }
    }

    /// The saved screen and the version of its key, which every apply compares against.
    public struct Saved: Equatable, Sendable {
        public var screen: PanelScreen
        /// 0 while the screen was never saved.
        public var version: UInt64

        public init(screen: PanelScreen, version: UInt64) {
            self.screen = screen
            self.version = version
        }
    }

    public struct State: Equatable, Sendable {
        /// The screens above the overview.
        public var path = StackState<PanelPath.State>()
        /// How many requests have been applied since the saved stack was created.
        public var applied = 0
        public var screenVersion: UInt64 = 0
        public var isLoaded = false
        public var isWatchingRequests = false
        public var pending: [Pending] = []
        /// The request being applied.
        public var applying: Pending?
        public var heater: HeaterDecision?
        /// Requests that were not valid requests, and were removed.
        public var rejected = 0
        public var lastError: String?

        public init() {}

        /// The stack as it is saved at `climate/panel/screen`.
        public var screen: PanelScreen {
            PanelScreen(path: [PanelScreen().path[0]] + path.map(\.name), applied: applied)
        }

        /// The line the panel shows: the stack, the heater, and what the top screen shows.
        public var line: String {
            let heater = heater.map { "heater \($0.mode.rawValue) at \($0.averageCelsius) °C" } ?? "heater unknown"
            let line = "panel: \(screen.path.joined(separator: " › "))  [\(heater); \(applied) requests applied]"
            guard let detail = path.last?.detail else { return line }
            return line + "  " + detail
        }

        /// The line, once the saved stack is loaded.
        var shownLine: String? { isLoaded ? line : nil }
    }

    @CasePathable
    public enum Action: Equatable, Sendable {
        case start
        case screenLoaded(Result<Saved, SharedStateError>)
        case requestsChanged(SharedItems<PanelRequest>)
        case requestApplied(Pending, screen: PanelScreen)
        /// The request or the saved screen changed under the apply, or the apply failed: the
        /// panel reloads both rather than guess.
        case requestNotApplied(Pending, reason: String)
        case requestRejected(key: String)
        case heaterChanged(Result<HeaterDecision?, SharedStateError>)
        case watchEnded(SharedStateError)
        case path(StackActionOf<PanelPath>)
    }

    enum CancelID { case load, requests, heater, show }

    @Dependency(\.sharedState) var sharedState
    @Dependency(\.panelDisplay) var display
    @Dependency(\.continuousClock) var clock

    public init() {}

    public var body: some ReducerOf<Self> {
        Reduce { state, action in core(&state, action) }
            .forEach(\.path, action: \.path) { PanelPath() }
            .onChange(of: \.shownLine) { _, line in
                Reduce { _, _ in line.map(show) ?? .none }
            }
    }

    private func core(_ state: inout State, _ action: Action) -> Effect<Action> {
        switch action {
        case .start:
            return load(&state)

        case .screenLoaded(.success(let saved)):
            state.screenVersion = saved.version
            state.isLoaded = true
            return .merge(
                navigate(&state, to: saved.screen),
                .observe(.heater) { .heaterChanged($0) }.cancellable(id: CancelID.heater, cancelInFlight: true)
            )

        case .screenLoaded(.failure(let error)):
            // A saved screen that no longer decodes is not overwritten: a person has to look.
            state.lastError = "cannot load the saved screen: \(error.message)"
            return .none

        case .requestsChanged(let items):
            if items.replacesAll { state.pending.removeAll() }
            state.pending.removeAll { items.deletes.contains($0.key) }
            var rejected: [SharedItem<PanelRequest>] = []
            for item in items.puts {
                state.pending.removeAll { $0.key == item.key }
                guard case .success(let request) = item.value, request.command != .push || request.screen != nil else {
                    rejected.append(item)
                    continue
                }
                let pending = Pending(key: item.key, version: item.version, createRevision: item.createRevision, request: request)
                if pending != state.applying { state.pending.append(pending) }
            }
            state.pending.sort { $0.createRevision < $1.createRevision }
            let removals = rejected.map { item in
                Effect<Action>.run { send in
                    _ = try? await sharedState.delete(item.key, ifVersion: item.version)
                    await send(.requestRejected(key: item.key))
                }
            }
            return .merge([applyNext(&state)] + removals)

        case .requestApplied(let request, let screen):
            guard request == state.applying else { return .none }
            state.screenVersion += 1
            state.applying = nil
            return .merge(navigate(&state, to: screen), applyNext(&state))

        case .requestNotApplied(let request, let reason):
            guard request == state.applying else { return .none }
            state.lastError = reason
            return load(&state)

        case .requestRejected:
            state.rejected += 1
            return .none

        case .heaterChanged(let result):
            switch result {
            case .success(let heater): state.heater = heater
            case .failure(let error): state.lastError = error.message
            }
            return watchRequests(&state)

        case .watchEnded(let error):
            state.lastError = error.message
            return .none

        case .path:
            return .none
        }
    }

    /// Starts the watch of the requests, once the heater's first answer is in. A fresh snapshot
    /// of the requests follows: everything still under the prefix.
    private func watchRequests(_ state: inout State) -> Effect<Action> {
        guard state.isLoaded, !state.isWatchingRequests else { return .none }
        state.isWatchingRequests = true
        return .observe(prefix: ClimateKeys.panelRequests, as: PanelRequest.self) {
            .requestsChanged($0)
        } catch: {
            .watchEnded($0)
        }
        .cancellable(id: CancelID.requests, cancelInFlight: true)
    }

    /// Makes the stack show `screen`: pops the screens that differ from it, pushes the rest, and
    /// starts the new screens' live work. Screens it keeps go on as they were.
    private func navigate(_ state: inout State, to screen: PanelScreen) -> Effect<Action> {
        let target = Array(screen.path.dropFirst())
        let current = state.path.map(\.name)
        var kept = 0
        while kept < min(target.count, current.count), target[kept] == current[kept] { kept += 1 }
        if kept < state.path.count { state.path.pop(from: state.path.ids[kept]) }
        var starts: [Effect<Action>] = []
        for name in target[kept...] {
            let element = PanelPath.State(screen: name)
            let id = state.path.push(element)
            if let start = element.start { starts.append(.send(.path(.element(id: id, action: start)))) }
        }
        state.applied = screen.applied
        return .merge(starts)
    }

    /// Forgets what it knew of the requests and loads the saved screen; the requests follow.
    /// While syncd is unreachable it retries.
    private func load(_ state: inout State) -> Effect<Action> {
        state.isLoaded = false
        state.isWatchingRequests = false
        state.pending = []
        state.applying = nil
        let key = SharedKey<PanelScreen>.panelScreen
        return .run { send in
            while true {
                let loaded = await Result { () async throws(SharedStateError) in try await sharedState.get(key.name) }
                switch loaded {
                case .success(let entry):
                    let saved = Result { () throws(SharedStateError) in Saved(screen: try key.decode(entry.value), version: entry.version) }
                    await send(.screenLoaded(saved))
                    return
                case .failure(let error) where error.code == .notFound:
                    await send(.screenLoaded(.success(Saved(screen: key.defaultValue, version: 0))))
                    return
                case .failure(let error) where error.code == .unavailable:
                    try await clock.sleep(for: .milliseconds(200))
                case .failure(let error):
                    await send(.screenLoaded(.failure(error)))
                    return
                }
            }
        }
        .cancellable(id: CancelID.load, cancelInFlight: true)
    }

    /// Starts applying the oldest pending request, unless one is being applied: the new screen is
    /// saved and the request deleted in one transaction, if neither changed since they were read.
    private func applyNext(_ state: inout State) -> Effect<Action> {
        guard state.isLoaded, state.applying == nil, !state.pending.isEmpty else { return .none }
        let next = state.pending.removeFirst()
        state.applying = next
        let screen = state.screen.applying(next.request)
        let screenKey = SharedKey<PanelScreen>.panelScreen
        let screenVersion = state.screenVersion
        return .run { send in
            let result = try await sharedState.transaction(
                Transaction(
                    compares: [.version(of: next.key, is: next.version), .version(of: screenKey.name, is: screenVersion)],
                    onSuccess: [.put(screenKey.name, value: try screenKey.encode(screen)), .delete(next.key)]
                )
            )
            if result.succeeded {
                await send(.requestApplied(next, screen: screen))
            } else {
                await send(.requestNotApplied(next, reason: "request \(next.key) or the saved screen changed before it was applied"))
            }
        } catch: { error, send in
            await send(.requestNotApplied(next, reason: "applying \(next.key) failed: \(error)"))
        }
    }

    private func show(_ line: String) -> Effect<Action> {
        .run { _ in
            guard !Task.isCancelled else { return }
            display.show(line)
        }
        .cancellable(id: CancelID.show, cancelInFlight: true)
    }
}
