import Foundation

@testable import FeatureStore

/// A note screen with no effects, beside `Counter` in a stack.
struct Note: Reducer, Sendable {
    struct State: Equatable, Sendable, Codable {
        var text: String
    }

    enum Action: Equatable, Sendable {
        case edit(String)
    }

    func reduce(into state: inout State, action: Action) -> Effect<Action> {
        switch action {
        case .edit(let text):
            state.text = text
            return .none
        }
    }
}

/// The screens a `Navigator` can push: a reducer over an enum state with a `Scope` per case.
struct Screen: Reducer, Sendable {
    @CasePathable
    enum State: Equatable, Sendable {
        case counter(Counter.State)
        case note(Note.State)
    }

    @CasePathable
    enum Action: Equatable, Sendable {
        case counter(Counter.Action)
        case note(Note.Action)
    }

    var body: some ReducerOf<Self> {
        Scope(state: \.counter, action: \.counter) { Counter() }
        Scope(state: \.note, action: \.note) { Note() }
    }
}

/// A parent with a navigation stack of `Screen`s.
struct Navigator: Reducer, Sendable {
    struct State: Equatable, Sendable {
        var path = StackState<Screen.State>()
        /// What the parent saw of the elements it was told about, in order.
        var seen: [String] = []
    }

    @CasePathable
    enum Action: Equatable, Sendable {
        case path(StackActionOf<Screen>)
        case pushCounter
        case pushNote(String)
        case popLast
        case replaceStack
        case tickEverywhere
    }

    var body: some ReducerOf<Self> {
        Reduce { state, action in
            switch action {
            case .path(.element(let id, .counter(.tick))):
                state.seen.append("tick of \(id)")
            case .path(.popFrom(let id)):
                // Reduced before the pop: the element is still there.
                state.seen.append("popping \(id), \(state.path.count) on the stack")
            case .path(.push(let id, _)):
                state.seen.append("pushing \(id)")
            case .path:
                break
            case .pushCounter:
                state.path.append(.counter(Counter.State()))
            case .pushNote(let text):
                state.path.append(.note(Note.State(text: text)))
            case .popLast:
                state.path.removeLast()
            case .replaceStack:
                state.path = StackState([.counter(Counter.State())])
            case .tickEverywhere:
                return .cancel(id: Counter.CancelID.ticks)
            }
            return .none
        }
        .forEach(\.path, action: \.path) { Screen() }
    }
}

/// A parent whose state is an enum, with a child on one case.
struct Session: Reducer, Sendable {
    @CasePathable
    enum State: Equatable, Sendable {
        case loggedOut
        case loggedIn(Counter.State)
    }

    @CasePathable
    enum Action: Equatable, Sendable {
        case counter(Counter.Action)
        case logIn(id: Int)
        case logOut
        case startOwnTicking
        case ownTick
    }

    @Dependency(\.continuousClock) var clock

    var body: some ReducerOf<Self> {
        Reduce { state, action in
            switch action {
            case .counter:
                return .none
            case .logIn(let id):
                state = .loggedIn(Counter.State(id: id))
                return .none
            case .logOut:
                state = .loggedOut
                return .none
            case .startOwnTicking:
                // The parent's own effect under the child's id: the child's cancel must not reach it.
                return .run { send in
                    try await clock.sleep(for: .seconds(1))
                    await send(.ownTick)
                }
                .cancellable(id: Counter.CancelID.ticks)
            case .ownTick:
                return .none
            }
        }
        .ifCaseLet(\.loggedIn, action: \.counter) { Counter() }
    }
}
