import FeatureStore
import Synchronization

/// Small features for the runtime's TCA semantics: follow-up effects, rows that remove
/// themselves, children replaced, dependencies in effects.

/// `.load` sends `.loaded`, whose effect saves after a sleep.
struct Loader: Reducer {
    struct State: Equatable {
        var isLoaded = false
        var isSaved = false
    }

    enum Action: Equatable, Sendable {
        case load
        case loaded
        case saved
    }

    @Dependency(\.continuousClock) var clock

    func reduce(into state: inout State, action: Action) -> Effect<Action> {
        switch action {
        case .load:
            return .run { send in await send(.loaded) }
        case .loaded:
            state.isLoaded = true
            return .run { send in
                try await clock.sleep(for: .milliseconds(20))
                await send(.saved)
            }
        case .saved:
            state.isSaved = true
            return .none
        }
    }
}

/// Counts calls from effects, from any task.
final class CallCounter: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func record() { count.withLock { $0 += 1 } }
}

/// A row whose delete request is an effect of the same action that makes the parent remove it.
struct Row: Reducer {
    struct State: Equatable, Identifiable {
        var id: Int
    }

    enum Action: Equatable, Sendable {
        case deleteTapped
    }

    let deletions: CallCounter

    func reduce(into state: inout State, action: Action) -> Effect<Action> {
        .run { [deletions] _ in
            await Task.yield()
            deletions.record()
        }
    }
}

struct RowList: Reducer {
    struct State: Equatable {
        var rows: IdentifiedArrayOf<Row.State> = []
        var detail: Row.State?
    }

    @CasePathable
    enum Action: Equatable, Sendable {
        case rows(IdentifiedActionOf<Row>)
        case detail(Row.Action)
    }

    let deletions: CallCounter

    var body: some ReducerOf<Self> {
        Reduce { state, action in
            switch action {
            case .rows(.element(let id, .deleteTapped)):
                state.rows.remove(id: id)
            case .detail(.deleteTapped):
                state.detail = nil
            }
            return .none
        }
        .forEach(\.rows, action: \.rows) { Row(deletions: deletions) }
        .ifLet(\.detail, action: \.detail) { Row(deletions: deletions) }
    }
}

/// A row shown on one case of an enum state, which its own delete action leaves.
struct RowScreen: Reducer {
    @CasePathable
    enum State: Equatable {
        case list
        case row(Row.State)
    }

    @CasePathable
    enum Action: Equatable, Sendable {
        case row(Row.Action)
    }

    let deletions: CallCounter

    var body: some ReducerOf<Self> {
        Reduce { state, action in
            switch action {
            case .row(.deleteTapped):
                state = .list
            }
            return .none
        }
        .ifCaseLet(\.row, action: \.row) { Row(deletions: deletions) }
    }
}

/// A child on enum state, to check that a new case ends the old case's effects.
struct Mode: Reducer {
    @CasePathable
    enum State: Equatable {
        case heating(Int)
        case cooling(Int)
    }

    enum Action: Equatable, Sendable {
        case startTicking
        case tick
        case becomeCooling
    }

    @Dependency(\.continuousClock) var clock

    func reduce(into state: inout State, action: Action) -> Effect<Action> {
        switch action {
        case .becomeCooling:
            state = .cooling(0)
            return .none
        case .startTicking:
            return .run { send in
                while true {
                    try await clock.sleep(for: .seconds(1))
                    await send(.tick)
                }
            }
        case .tick:
            switch state {
            case .heating(let count): state = .heating(count + 1)
            case .cooling(let count): state = .cooling(count + 1)
            }
            return .none
        }
    }
}

struct ModeHost: Reducer {
    struct State: Equatable {
        var mode: Mode.State?
    }

    @CasePathable
    enum Action: Equatable, Sendable {
        case mode(Mode.Action)
        case switchToCooling
    }

    var body: some ReducerOf<Self> {
        Reduce { state, action in
            if case .switchToCooling = action { state.mode = .cooling(0) }
            return .none
        }
        .ifLet(\.mode, action: \.mode) { Mode() }
    }
}

/// A dependency whose value tells which context set it.
struct FeatureNameKey: DependencyKey {
    static let liveValue = "live"
    static let testValue = "test"
}

extension DependencyValues {
    var featureName: String {
        get { self[FeatureNameKey.self] }
        set { self[FeatureNameKey.self] = newValue }
    }
}

/// Reads `featureName` when it is made, in its reducer, and in its effect.
struct NameReader: Reducer {
    struct State: Equatable {
        var atInit = ""
        var inReducer = ""
        var inEffect = ""
    }

    enum Action: Equatable, Sendable {
        case read
        case readInEffect(String)
    }

    @Dependency(\.featureName) var name
    let nameAtInit: String

    init() {
        @Dependency(\.featureName) var name
        nameAtInit = name
    }

    func reduce(into state: inout State, action: Action) -> Effect<Action> {
        switch action {
        case .read:
            state.atInit = nameAtInit
            state.inReducer = name
            return .run { send in await send(.readInEffect(name)) }
        case .readInEffect(let name):
            state.inEffect = name
            return .none
        }
    }
}

struct NameReaderHost: Reducer {
    struct State: Equatable {
        var child = NameReader.State()
    }

    @CasePathable
    enum Action: Equatable, Sendable {
        case child(NameReader.Action)
    }

    var body: some ReducerOf<Self> {
        Scope(state: \.child, action: \.child) {
            NameReader().dependency(\.featureName, "child")
        }
    }
}
