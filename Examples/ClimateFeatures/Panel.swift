import SharedState

/// The panel: a root store whose navigation stack is driven by requests other processes publish
/// under `climate/panel/requests/`, the seeds' navigation publisher across processes.
///
/// Each request is applied exactly once, in the order requests were created: the panel saves
/// its new screen at `climate/panel/screen` and deletes the request in one transaction, and only
/// then takes the new screen as its state. After a restart it loads the saved screen first, so a
/// request applied before the restart is neither lost nor applied again.
public struct Panel: Reducer, Sendable {
    /// A request waiting to be applied.
    public struct Pending: Equatable, Sendable {
        public var key: String
        public var version: UInt64
        public var createRevision: UInt64
        public var request: PanelRequest
    }

    public struct State: Equatable, Sendable {
        public var screen = PanelScreen()
        public var isLoaded = false
        public var pending: [Pending] = []
        /// The key of the request being applied.
        public var applying: String?
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
        case screenLoaded(Result<PanelScreen, SharedStateError>)
        case requestsChanged(SharedItems<PanelRequest>)
        case requestApplied(key: String, screen: PanelScreen)
        case requestNotApplied(key: String, reason: String)
        case heaterChanged(Result<HeaterDecision?, SharedStateError>)
        case watchEnded(SharedStateError)
    }

    enum CancelID { case requests, heater }

    @Dependency(\.sharedState) var sharedState
    @Dependency(\.panelDisplay) var display

    public init() {}

    public func reduce(into state: inout State, action: Action) -> Effect<Action> {
        switch action {
        case .start:
            // The saved screen first: requests are applied on top of it.
            return .run { send in
                let screen = await Result { () async throws(SharedStateError) in try await sharedState.get(.panelScreen) }
                await send(.screenLoaded(screen))
            }

        case .screenLoaded(.success(let screen)):
            state.screen = screen
            state.isLoaded = true
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
            var rejected: [SharedItem<PanelRequest>] = []
            if items.replacesAll { state.pending.removeAll { $0.key != state.applying } }
            state.pending.removeAll { items.deletes.contains($0.key) && $0.key != state.applying }
            for item in items.puts {
                state.pending.removeAll { $0.key == item.key && $0.key != state.applying }
                guard case .success(let request) = item.value, request.command != .push || request.screen != nil else {
                    rejected.append(item)
                    continue
                }
                state.pending.append(
                    Pending(key: item.key, version: item.version, createRevision: item.createRevision, request: request)
                )
            }
            state.pending.sort { $0.createRevision < $1.createRevision }
            let removals = rejected.map { item in
                Effect<Action>.run { send in
                    _ = try? await sharedState.delete(item.key, ifVersion: item.version)
                    await send(.requestNotApplied(key: item.key, reason: "not a valid panel request"))
                }
            }
            return .merge([applyNext(&state)] + removals)

        case .requestApplied(let key, let screen):
            state.screen = screen
            state.pending.removeAll { $0.key == key }
            state.applying = nil
            return .merge(show(state), applyNext(&state))

        case .requestNotApplied(let key, let reason):
            if reason == "not a valid panel request" { state.rejected += 1 } else { state.lastError = reason }
            state.pending.removeAll { $0.key == key }
            if state.applying == key { state.applying = nil }
            return applyNext(&state)

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

    /// Starts applying the oldest pending request, unless one is being applied.
    private func applyNext(_ state: inout State) -> Effect<Action> {
        guard state.isLoaded, state.applying == nil, let next = state.pending.first else { return .none }
        state.applying = next.key
        let screen = state.screen.applying(next.request)
        return .run { send in
            let encoded = try SharedKey<PanelScreen>.panelScreen.encode(screen)
            let result = try await sharedState.transaction(
                Transaction(
                    compares: [.version(of: next.key, is: next.version)],
                    onSuccess: [.put(SharedKey<PanelScreen>.panelScreen.name, value: encoded), .delete(next.key)]
                )
            )
            if result.succeeded {
                await send(.requestApplied(key: next.key, screen: screen))
            } else {
                await send(.requestNotApplied(key: next.key, reason: "request \(next.key) changed before it was applied"))
            }
        } catch: { error, send in
            await send(.requestNotApplied(key: next.key, reason: "applying \(next.key) failed: \(error)"))
        }
    }

    private func show(_ state: State) -> Effect<Action> {
        let line = state.line
        return .run { _ in display.show(line) }
    }
}
