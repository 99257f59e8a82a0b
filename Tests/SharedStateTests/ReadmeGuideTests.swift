import SharedState
import Testing

// More of the guide's features and their tests; the "Getting started" feature and its test are in
// GettingStarted/, in regions the documentation's snippets are checked against.

// The README's process, compiled and never run (its `main` would take over the test process).
enum LobbyProcess {
    static func main() {
        FeatureHost(name: "lobby").main(initialState: Lobby.State(), reducer: { Lobby() }, start: .start)
    }
}

@Suite struct ReadmeGuideTests {
    @MainActor @Test func schemaDriftReachesTheReducerAsAFailure() async throws {
        let sharedState = InMemorySharedState(["lobby/visitors": #""many""#])
        let store = TestStore(initialState: Lobby.State()) {
            Lobby()
        } withDependencies: {
            $0.sharedState = sharedState
        }
        await store.send(.start)
        await store.receive(\.visitorsChanged) {
            $0.problem = #"the value of key "lobby/visitors" is not a Int: expected Int, found a string"#
        }
        await store.skipInFlightEffects()
        await store.finish()
    }

    @Test func theLobbyRunsAgainstARealSyncd() async throws {
        try await withDaemon { socketPath in try await Self.runLobby(socketPath) }
    }

    @MainActor private static func runLobby(_ socketPath: String) async throws {
        let client = try await connect(socketPath)
        let other = try await connect(socketPath, name: "other process")
        let store = Store(initialState: Lobby.State()) {
            Lobby()
        } withDependencies: {
            $0.sharedState = client
        }
        store.send(.start)
        try await other.set(.visitors, to: 41)
        store.send(.doorOpened)
        for _ in 0..<500 where store.visitors != 42 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(store.visitors == 42)
        #expect(try await other.get(.visitors) == 42)
        store.shutDown()
        await other.close()
        await client.close()
    }
}

// The README's request channel, and its exhaustive test.

// snippet: inbox-feature
/// A request channel: other processes put requests under `inbox/requests/`; the inbox applies
/// each one and deletes it in the same transaction, so after a crash a request is applied once.
struct Inbox: Reducer, Sendable {
    struct State: Equatable, Sendable {
        var applied: [String] = []
    }

    @CasePathable
    enum Action: Equatable, Sendable {
        case start
        case requestsChanged(SharedItems<String>)
        case requestApplied(key: String, Result<TransactionResult, SharedStateError>)
    }

    enum CancelID { case requests }
    @Dependency(\.sharedState) var sharedState

    func reduce(into state: inout State, action: Action) -> Effect<Action> {
        switch action {
        case .start:
            return .observe(prefix: "inbox/requests/", as: String.self) { .requestsChanged($0) }
                .cancellable(id: CancelID.requests)
        case .requestsChanged(let items):
            // Apply each request only if it is still the version we saw, and delete it with it.
            return .merge(
                items.puts.map { item in
                    .run { send in
                        let result = await Result { () async throws(SharedStateError) in
                            try await sharedState.transaction(
                                Transaction(
                                    compares: [.version(of: item.key, is: item.version)],
                                    onSuccess: [.put("inbox/last", json: #""\#(item.key)""#), .delete(item.key)]
                                )
                            )
                        }
                        await send(.requestApplied(key: item.key, result))
                    }
                }
            )
        case .requestApplied(let key, .success(let result)) where result.succeeded:
            state.applied.append(key)
            return .none
        case .requestApplied:
            return .none  // someone else applied or withdrew it first
        }
    }
}
// snippet end

// snippet: inbox-test
@MainActor @Test func appliesEachRequestOnce() async throws {
    let sharedState = InMemorySharedState()
    let store = TestStore(initialState: Inbox.State()) {
        Inbox()
    } withDependencies: {
        $0.sharedState = sharedState
    }
    await store.send(.start)
    await store.receive(\.requestsChanged)  // the snapshot: no request yet
    try await sharedState.put("inbox/requests/1", json: #""open the door""#)  // another process
    await store.receive(\.requestsChanged)  // the request
    await store.receive(\.requestsChanged)  // its deletion, by our transaction
    await store.receive(\.requestApplied) { $0.applied = ["inbox/requests/1"] }
    await store.skipInFlightEffects()
    await store.finish()
}
// snippet end

/// The exhaustive test above, 200 times: the in-memory state gives watches syncd's order, so it
/// never depends on which task reaches the main actor first.
@MainActor @Test(arguments: 1...200) func theRequestChannelTestIsDeterministic(run: Int) async throws {
    try await appliesEachRequestOnce()
}

// The README's "What a real feature reaches for next".

// snippet: dashboard-feature
struct Reading: Codable, Equatable, Sendable {
    var celsius: Double
}

extension SharedKey where Value == Bool {
    static func online(_ name: String) -> Self { SharedKey("lobby/online/\(name)", default: false) }
}

extension SharedKey where Value == Double {
    static let target = SharedKey("lobby/target", default: 21)
}

struct Dashboard: Reducer, Sendable {
    struct State: Equatable, Sendable {
        var readings: [String: Reading] = [:]
        var connection = ConnectionState.connected
        var target = 21.0
        var saveFailure: String?
    }

    @CasePathable
    enum Action: Equatable, Sendable {
        case start
        case readingsChanged(SharedItems<Reading>)
        case connectionChanged(ConnectionState)
        case targetPicked(Double)
        case targetSaved(Result<PutResult, SharedStateError>)
    }

    enum CancelID { case readings, connection }
    @Dependency(\.sharedState) var sharedState

    func reduce(into state: inout State, action: Action) -> Effect<Action> {
        switch action {
        case .start:
            return .merge(
                // Every key under a prefix: a snapshot, then what changed at each revision.
                .observe(prefix: "lobby/sensors/", as: Reading.self) { .readingsChanged($0) }
                    .cancellable(id: CancelID.readings),
                // Presence: deleted by syncd when this process ends, put back after syncd restarts.
                .set(.online("dashboard"), to: true, ephemeral: true),
                // Whether syncd is reachable: to show it, or to redo work after a restart.
                .run { send in
                    for await state in sharedState.connectionStates() { await send(.connectionChanged(state)) }
                }
                .cancellable(id: CancelID.connection)
            )
        case .readingsChanged(let items):
            items.apply(to: &state.readings)  // a snapshot replaces; later batches add and remove
            return .none
        case .connectionChanged(let connection):
            state.connection = connection
            return .none
        case .targetPicked(let celsius):
            state.target = celsius
            // Write-through, with the result as an action (without `then:` a failure is reported).
            return .set(.target, to: celsius, then: { .targetSaved($0) })
        case .targetSaved(.success):
            state.saveFailure = nil
            return .none
        case .targetSaved(.failure(let error)):
            state.saveFailure = error.message
            return .none
        }
    }
}
// snippet end

// snippet: dashboard-test
@MainActor @Test func showsReadingsAndSavesTheTarget() async throws {
    let sharedState = InMemorySharedState(["lobby/sensors/hall": #"{"celsius":19.5}"#])
    let store = TestStore(initialState: Dashboard.State()) {
        Dashboard()
    } withDependencies: {
        $0.sharedState = sharedState
    }
    // The watch, the presence write and the connection's state run side by side, in no fixed
    // order: check what they lead to, not the order of their actions.
    store.exhaustivity = .off
    await store.send(.start)
    await store.receive(\.readingsChanged) { $0.readings = ["lobby/sensors/hall": Reading(celsius: 19.5)] }
    await store.send(.targetPicked(22)) { $0.target = 22 }
    await store.receive(\.targetSaved)
    #expect(try await sharedState.get(.target) == 22)
    await store.skipInFlightEffects()
    await store.finish()
}
// snippet end

// "Navigation: a stack of features". The README takes `SensorScreen` from the example; this is a
// stand-in with the same shape.

struct SensorScreen: Reducer, Sendable {
    struct State: Equatable, Sendable {
        var sensor: String
        var started = false
    }

    @CasePathable
    enum Action: Equatable, Sendable { case start }

    func reduce(into state: inout State, action: Action) -> Effect<Action> {
        state.started = true
        return .none
    }
}

// snippet: path-reducer
struct Path: Reducer, Sendable {
    @CasePathable enum State: Equatable, Sendable { case sensor(SensorScreen.State), page(String) }
    @CasePathable enum Action: Equatable, Sendable { case sensor(SensorScreen.Action) }

    var body: some ReducerOf<Self> {
        Scope(state: \.sensor, action: \.sensor) { SensorScreen() }
    }
}

struct Panel: Reducer, Sendable {
    struct State: Equatable, Sendable { var path = StackState<Path.State>() }
    @CasePathable enum Action: Equatable, Sendable {
        case path(StackActionOf<Path>)
        case show(String)
    }

    var body: some ReducerOf<Self> {
        Reduce { state, action in
            switch action {
            case .show(let sensor):
                let id = state.path.push(.sensor(SensorScreen.State(sensor: sensor)))
                return .send(.path(.element(id: id, action: .sensor(.start))))  // start its watch
            case .path:
                return .none
            }
        }
        .forEach(\.path, action: \.path) { Path() }
    }
}
// snippet end

@MainActor @Test func aPushedScreenIsStartedAndPoppedByID() async {
    let store = TestStore(initialState: Panel.State()) { Panel() }
    await store.send(.show("hall")) { $0.path.append(.sensor(SensorScreen.State(sensor: "hall"))) }
    await store.receive(.path(.element(id: 0, action: .sensor(.start)))) {
        $0.path[id: 0] = .sensor(SensorScreen.State(sensor: "hall", started: true))
    }
    await store.send(.path(.popFrom(id: 0))) { $0.path = [] }
    await store.finish()
}

// "A list and its detail screen": two watches of one store see each change in the order they
// started.

// snippet: doors
struct Door: Codable, Equatable, Sendable {
    var isLocked: Bool
}

extension SharedKey where Value == Door {
    static func door(_ id: String) -> Self { SharedKey("doors/\(id)", default: Door(isLocked: false)) }
}

struct DoorDetail: Reducer, Sendable {
    struct State: Equatable, Sendable {
        var id: String
        var door: Door?
    }

    @CasePathable
    enum Action: Equatable, Sendable {
        case start
        case doorChanged(Result<Door, SharedStateError>)
        case setLocked(Bool)
    }

    enum CancelID { case door }

    func reduce(into state: inout State, action: Action) -> Effect<Action> {
        switch action {
        case .start:
            return .observe(.door(state.id)) { .doorChanged($0) }.cancellable(id: CancelID.door)
        case .doorChanged(.success(let door)):
            state.door = door
            return .none
        case .doorChanged(.failure):
            state.door = nil
            return .none
        case .setLocked(let isLocked):
            return .set(.door(state.id), to: Door(isLocked: isLocked))
        }
    }
}

struct DoorList: Reducer, Sendable {
    struct State: Equatable, Sendable {
        var doors: [String: Door] = [:]
        var path = StackState<DoorDetail.State>()
    }

    @CasePathable
    enum Action: Equatable, Sendable {
        case start
        case doorsChanged(SharedItems<Door>)
        case open(String)
        case path(StackActionOf<DoorDetail>)
    }

    enum CancelID { case doors }

    var body: some ReducerOf<Self> {
        Reduce { state, action in
            switch action {
            case .start:
                return .observe(prefix: "doors/", as: Door.self) { .doorsChanged($0) }.cancellable(id: CancelID.doors)
            case .doorsChanged(let items):
                items.apply(to: &state.doors)
                return .none
            case .open(let id):
                let element = state.path.push(DoorDetail.State(id: id))
                return .send(.path(.element(id: element, action: .start)))
            case .path:
                return .none
            }
        }
        .forEach(\.path, action: \.path) { DoorDetail() }
    }
}

@MainActor @Test func theListSeesAChangeBeforeTheDetailOpenedFromIt() async throws {
    let sharedState = InMemorySharedState(["doors/1": #"{"isLocked":false}"#])
    let store = TestStore(initialState: DoorList.State()) {
        DoorList()
    } withDependencies: {
        $0.sharedState = sharedState
    }
    await store.send(.start)
    await store.receive(\.doorsChanged) { $0.doors = ["doors/1": Door(isLocked: false)] }
    await store.send(.open("1")) { $0.path.append(DoorDetail.State(id: "1")) }
    await store.receive(.path(.element(id: 0, action: .start)))
    await store.receive(.path(.element(id: 0, action: .doorChanged(.success(Door(isLocked: false)))))) {
        $0.path[id: 0]?.door = Door(isLocked: false)
    }
    await store.send(.path(.element(id: 0, action: .setLocked(true))))
    // The list's watch started first, so it hears of the write first; then the detail's.
    await store.receive(\.doorsChanged) { $0.doors["doors/1"] = Door(isLocked: true) }
    await store.receive(.path(.element(id: 0, action: .doorChanged(.success(Door(isLocked: true)))))) {
        $0.path[id: 0]?.door = Door(isLocked: true)
    }
    await store.send(.path(.popFrom(id: 0))) { $0.path = [] }
    await store.skipInFlightEffects()
    await store.finish()
}
// snippet end

/// The list + detail test above, 200 times in a row.
@MainActor @Test(arguments: 1...200) func theListAndDetailTestIsDeterministic(run: Int) async throws {
    try await theListSeesAChangeBeforeTheDetailOpenedFromIt()
}

/// A write made by the detail screen's effect, through a real syncd: its cause names the whole
/// path of the action, down to the case the detail handled.
@Test func aNestedWritesCauseNamesTheActionDownToItsLeaf() async throws {
    try await withDaemon { socketPath in
        var configuration = SharedStateClient.Configuration(socketPath: socketPath, clientName: "door-panel")
        configuration.causeOfWrites = { EffectOrigin.current?.description() }  // as FeatureHost does
        let client = try await SharedStateClient.connect(configuration)
        try await client.put("doors/1", json: #"{"isLocked":false}"#)
        var watch = client.watch(prefixes: ["doors/"]).makeAsyncIterator()
        _ = try await watch.next()  // the snapshot
        let store = await MainActor.run {
            let store = Store(initialState: DoorList.State()) {
                DoorList()
            } withDependencies: {
                $0.sharedState = client
            }
            store.send(.open("1"))
            store.send(.path(.element(id: 0, action: .setLocked(true))))
            return store
        }
        var batch = try await watch.next()
        while batch?.kind == .progress { batch = try await watch.next() }
        #expect(batch?.cause == "DoorList: path.element(id: #0).setLocked(true)")
        await MainActor.run { store.shutDown() }
        await client.close()
    }
}
