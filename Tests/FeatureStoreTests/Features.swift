import FeatureStore

/// Small features the runtime tests drive.
struct Counter: Reducer, Sendable {
    struct State: Equatable, Sendable, Identifiable {
        var id = 0
        var count = 0
        var log: [String] = []
    }

    @CasePathable
    enum Action: Equatable, Sendable {
        case increment
        case incrementLater
        case incrementTwiceInOrder
        case echo(String)
        case startTicking
        case stopTicking
        case tick
        case fail
        case failed(String)
        case throwUnhandled
        case startThenEcho
        case echoBothInOrder
    }

    enum CancelID { case ticks }
    struct Boom: Error {}

    @Dependency(\.continuousClock) var clock

    func reduce(into state: inout State, action: Action) -> Effect<Action> {
        switch action {
        case .increment:
            state.count += 1
            return .none
        case .incrementLater:
            return .run { send in await send(.increment) }
        case .incrementTwiceInOrder:
            return .concatenate(
                .run { send in
                    try await clock.sleep(for: .milliseconds(20))
                    await send(.echo("first"))
                },
                .send(.echo("second"))
            )
        case .echo(let text):
            state.log.append(text)
            return .none
        case .startTicking:
            return .run { send in
                while true {
                    try await clock.sleep(for: .seconds(1))
                    await send(.tick)
                }
            }
            .cancellable(id: CancelID.ticks, cancelInFlight: true)
        case .stopTicking:
            return .cancel(id: CancelID.ticks)
        case .tick:
            state.count += 1
            return .none
        case .fail:
            return .run { _ in
                throw Boom()
            } catch: { error, send in
                await send(.failed("\(error)"))
            }
        case .failed(let message):
            state.log.append(message)
            return .none
        case .throwUnhandled:
            return .run { _ in throw Boom() }
        case .startThenEcho:
            // The echo must not wait for the timer that .startTicking starts.
            return .concatenate(.send(.startTicking), .send(.echo("after")))
        case .echoBothInOrder:
            return .concatenate(.send(.echo("a")), .send(.echo("b")))
        }
    }
}

/// A parent with a child on plain, optional and collection state.
struct Parent: Reducer, Sendable {
    struct State: Equatable, Sendable {
        var counter = Counter.State()
        var detail: Counter.State?
        var rows: IdentifiedArrayOf<Counter.State> = []
        var childChanges = 0
    }

    @CasePathable
    enum Action: Equatable, Sendable {
        case counter(Counter.Action)
        case detail(Counter.Action)
        case rows(IdentifiedActionOf<Counter>)
        case showDetail
        case hideDetail
        case addRow(Int)
        case removeRow(Int)
        case replaceDetail(id: Int)
        case stopAllTicking
    }

    var body: some ReducerOf<Self> {
        Scope(state: \.counter, action: \.counter) { Counter() }
        Reduce { state, action in
            switch action {
            case .counter, .detail, .rows:
                state.childChanges += 1
            case .showDetail:
                state.detail = Counter.State()
            case .hideDetail:
                state.detail = nil
            case .addRow(let id):
                state.rows.append(Counter.State(id: id))
            case .removeRow(let id):
                state.rows.remove(id: id)
            case .replaceDetail(let id):
                state.detail = Counter.State(id: id)
            case .stopAllTicking:
                // The children use the same id: the parent's cancel reaches their effects.
                return .cancel(id: Counter.CancelID.ticks)
            }
            return .none
        }
        .ifLet(\.detail, action: \.detail) { Counter() }
        .forEach(\.rows, action: \.rows) { Counter() }
    }
}
