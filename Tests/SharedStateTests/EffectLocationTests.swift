import SharedState
import Testing

/// The shared-state effects are named by where the feature made them: a test that ends with one
/// still running points at the feature's line, not the library's.
@Suite struct EffectLocationTests {
    struct Watcher: Reducer, Sendable {
        @CasePathable
        enum Action: Equatable, Sendable {
            case start
            case startItems
            case visitorsChanged(Result<Int, SharedStateError>)
            case itemsChanged(SharedItems<Int>)
        }

        /// The lines of the two `.observe`s below.
        static let observeLine: UInt = #line + 6
        static let observePrefixLine: UInt = #line + 10

        func reduce(into state: inout Int, action: Action) -> Effect<Action> {
            switch action {
            case .start:
                return .observe(.visitors) { .visitorsChanged($0) }
            case .visitorsChanged(let value):
                state = (try? value.get()) ?? -1
                return .none
            case .startItems:
                return .observe(prefix: "lobby/", as: Int.self) { .itemsChanged($0) }
            case .itemsChanged:
                return .none
            }
        }
    }

    @MainActor @Test func aStillRunningObserveIsNamedByTheFeaturesLine() async {
        let store = TestStore(initialState: 0) {
            Watcher()
        } withDependencies: {
            $0.sharedState = InMemorySharedState(["lobby/visitors": "2"])
        }
        await store.send(.start)
        await store.receive(\.visitorsChanged) { $0 = 2 }
        await withKnownIssue {
            await store.finish(timeout: .milliseconds(50))
        } matching: { issue in
            let text = issue.comments.map(\.rawValue).joined()
            return text.contains("still running") && text.contains("EffectLocationTests.swift:\(Watcher.observeLine)")
                && !text.contains("Effect+SharedState.swift")
        }
    }

    @MainActor @Test func aStillRunningObserveOfAPrefixIsNamedByTheFeaturesLine() async {
        let store = TestStore(initialState: 0) {
            Watcher()
        } withDependencies: {
            $0.sharedState = InMemorySharedState(["lobby/visitors": "2"])
        }
        store.exhaustivity = .off
        await store.send(.startItems)
        await store.receive(\.itemsChanged)
        store.exhaustivity = .on
        await withKnownIssue {
            await store.finish(timeout: .milliseconds(50))
        } matching: { issue in
            let text = issue.comments.map(\.rawValue).joined()
            return text.contains("still running") && text.contains("EffectLocationTests.swift:\(Watcher.observePrefixLine)")
        }
    }
}
