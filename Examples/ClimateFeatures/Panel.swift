import SharedState

/// The panel: a root store whose navigation stack is driven by requests other processes publish
/// under `climate/panel/requests/`, the seeds' navigation publisher across processes.
///
/// Each request is applied exactly once, in the order requests were created: the panel saves
/// its new screen at `climate/panel/screen` and deletes the request in one transaction, and only
/// then takes the new screen as its state. After a restart it loads the saved screen first, so a
/// request applied before the restart is neither lost nor applied again.
public struct Panel: Reducer, Sendable {
    /// A request waiting to be applied: one version of one request key.
    public struct Pending: Equatable, Sendable {
        public var key: String
        public var version: UInt64
        public var createRevision: UInt64
        public var request: PanelRequest
    }

    /// The saved screen and the version of its key, which every apply compares against.
    public struct Saved: Equatable, Sendable {
        public var screen: PanelScreen
        /// 0 while the screen was never saved.
        public var version: UInt64
    }

    public struct State: Equatable, Sendable {
        public var screen = PanelScreen()
        public var screenVersion: UInt64 = 0
        public var isLoaded = false
        public var pending: [Pending] = []
        /// The request being applied.
        public var applying: Pending?
        public var heater: HeaterDecision?
        /// Requests that were not valid requests, and were removed.
        public var rejected = 0
        public var lastError: String?

        public init() {}

        /// The line the panel shows.
        public var line: String {
            let heater = heater.map { "heater \($0.mode.rawValue) at \($0.averageCelsius) °C" } ?? "heater unknown"
            return "panel: \(screen.path.joined(separator: " › "))  [\(heater); \(screen.applied) requests applied]"
        }
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
    }

    enum CancelID { case load, requests, heater, show }

    @Dependency(\.sharedState) var sharedState
    @Dependency(\.panelDisplay) var display
    @Dependency(\.continuousClock) var clock

    public init() {}

    public func reduce(into state: inout State, action: Action) -> Effect<Action> {
        switch action {
        case .start:
            return load(&state)

        case .screenLoaded(.success(let saved)):
            state.screen = saved.screen
            state.screenVersion = saved.version
            state.isLoaded = true
            // A fresh snapshot of the requests follows: everything still under the prefix.
            return .merge(
                show(state),
                .observe(prefix: ClimateKeys.panelRequests, as: PanelRequest.self) {
                    .requestsChanged($0)
                } catch: {
                    .watchEnded($0)
                }
                .cancellable(id: CancelID.requests, cancelInFlight: true),
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
            state.screen = screen
            state.screenVersion += 1
            state.applying = nil
            return .merge(show(state), applyNext(&state))

        case .requestNotApplied(let request, let reason):
            guard request == state.applying else { return .none }
            state.lastError = reason
            return load(&state)

        case .requestRejected:
            state.rejected += 1
            return .none

        case .heaterChanged(.success(let heater)):
            guard heater != state.heater else { return .none }
            state.heater = heater
            return show(state)

        case .heaterChanged(.failure(let error)):
            state.lastError = error.message
            return .none

        case .watchEnded(let error):
            state.lastError = error.message
            return .none
        }
    }

    /// Forgets what it knew of the requests and loads the saved screen; the requests follow.
    /// While syncd is unreachable it retries.
    private func load(_ state: inout State) -> Effect<Action> {
        state.isLoaded = false
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

    private func show(_ state: State) -> Effect<Action> {
        let line = state.line
        return .run { _ in
            guard !Task.isCancelled else { return }
            display.show(line)
        }
        .cancellable(id: CancelID.show, cancelInFlight: true)
    }
}
