import FeatureStore
import Testing

@MainActor
@Suite struct CompositionTests {
    @Test func scopeRunsTheChildOnItsStateAndEmbedsItsActions() async {
        let store = TestStore(initialState: Parent.State()) { Parent() }
        await store.send(.counter(.incrementLater)) { $0.childChanges = 1 }
        await store.receive(.counter(.increment)) {
            $0.counter.count = 1
            $0.childChanges = 2
        }
        await store.finish()
    }

    @Test func ifLetRunsWhilePresentAndCancelsOnDismiss() async {
        let clock = TestClock()
        let store = TestStore(initialState: Parent.State()) {
            Parent()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.showDetail) { $0.detail = Counter.State() }
        await store.send(.detail(.startTicking)) { $0.childChanges = 1 }
        await clock.advance(by: .seconds(1))
        await store.receive(.detail(.tick)) {
            $0.detail?.count = 1
            $0.childChanges = 2
        }
        // Dismissing cancels the child's timer: the test ends with no effect running.
        await store.send(.hideDetail) { $0.detail = nil }
        await clock.advance(by: .seconds(3))
        await store.finish()
    }

    @Test func ifLetReportsAnActionForAbsentState() async {
        let store = TestStore(initialState: Parent.State()) { Parent() }
        await withKnownIssue {
            await store.send(.detail(.increment)) { $0.childChanges = 1 }
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("while its state was nil")
        }
    }

    @Test func forEachRoutesByIDAndCancelsRemovedElements() async {
        let clock = TestClock()
        let store = TestStore(initialState: Parent.State()) {
            Parent()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.addRow(1)) { $0.rows = [Counter.State(id: 1)] }
        await store.send(.addRow(2)) { $0.rows.append(Counter.State(id: 2)) }
        await store.send(.rows(.element(id: 2, action: .increment))) {
            $0.rows[id: 2]?.count = 1
            $0.childChanges = 1
        }
        await store.send(.rows(.element(id: 1, action: .startTicking))) { $0.childChanges = 2 }
        await clock.advance(by: .seconds(1))
        await store.receive(.rows(.element(id: 1, action: .tick))) {
            $0.rows[id: 1]?.count = 1
            $0.childChanges = 3
        }
        await store.send(.removeRow(1)) { $0.rows.remove(id: 1) }
        await clock.advance(by: .seconds(3))
        await store.finish()
    }

    @Test func oneElementsCancelLeavesTheOthersEffectsRunning() async {
        let clock = TestClock()
        let store = TestStore(initialState: Parent.State(rows: [Counter.State(id: 1), Counter.State(id: 2)])) {
            Parent()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.rows(.element(id: 1, action: .startTicking))) { $0.childChanges = 1 }
        await store.send(.rows(.element(id: 2, action: .startTicking))) { $0.childChanges = 2 }
        await store.send(.rows(.element(id: 1, action: .stopTicking))) { $0.childChanges = 3 }
        await clock.advance(by: .seconds(1))
        await store.receive(.rows(.element(id: 2, action: .tick))) {
            $0.rows[id: 2]?.count = 1
            $0.childChanges = 4
        }
        await store.send(.rows(.element(id: 2, action: .stopTicking))) { $0.childChanges = 5 }
        await store.finish()
    }
}
