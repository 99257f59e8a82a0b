import Synchronization

/// What a ``TestStore`` learns from its reducer: the state after the action the test sent, and
/// each action effects sent with the state after it.
final class TestRecorder<State, Action>: @unchecked Sendable {
    // Only touched on the main actor (reducers run there); `@unchecked` so that the store's
    // nonisolated deinit can read the counts through `leftovers`.
    struct Received {
        var action: Action
        var state: State
    }

    var isSendingFromTest = false
    var stateAfterSent: State?
    var received: [Received] = []
    private let leftoverCount = Mutex(0)

    func recordSent(_ state: State) {
        stateAfterSent = state
    }

    func recordReceived(_ action: Action, state: State) {
        received.append(Received(action: action, state: state))
        leftoverCount.withLock { $0 = received.count }
    }

    func removeFirstReceived() -> Received {
        defer { leftoverCount.withLock { $0 = received.count } }
        return received.removeFirst()
    }

    func removeAllReceived() {
        received.removeAll()
        leftoverCount.withLock { $0 = 0 }
    }

    /// How many received actions the test has not handled.
    var leftovers: Int { leftoverCount.withLock { $0 } }
}

/// Runs the feature's reducer and tells the recorder about each action.
struct TestReducer<Base: Reducer>: Reducer {
    let base: (inout Base.State, Base.Action) -> Effect<Base.Action>
    let recorder: TestRecorder<Base.State, Base.Action>

    func reduce(into state: inout Base.State, action: Base.Action) -> Effect<Base.Action> {
        let effect = base(&state, action)
        if recorder.isSendingFromTest {
            recorder.isSendingFromTest = false
            recorder.recordSent(state)
        } else {
            recorder.recordReceived(action, state: state)
        }
        return effect
    }
}
