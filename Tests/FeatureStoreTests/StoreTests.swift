import FeatureStore
import Testing

@MainActor
@Suite struct StoreTests {
    @Test func sendReducesAtOnceAndTheTaskAwaitsEffects() async {
        let store = Store(initialState: Counter.State()) { Counter() }
        store.send(.increment)
        #expect(store.count == 1)
        await store.send(.incrementLater).finish()
        #expect(store.count == 2)
    }

    @Test func statesAreDeduplicated() async {
        let store = Store(initialState: Counter.State()) { Counter() }
        var iterator = store.states.makeAsyncIterator()
        #expect(await iterator.next()?.count == 0)
        store.send(.stopTicking)  // no change: nothing yielded
        store.send(.increment)
        #expect(await iterator.next()?.count == 1)
    }

    @Test func aScopedStoreReadsAndSendsThroughItsParent() async {
        let parent = Store(initialState: Parent.State()) { Parent() }
        let child = parent.scope(state: \.counter, action: \.counter)
        child.send(.increment)
        #expect(child.count == 1)
        #expect(parent.counter.count == 1)
        #expect(parent.childChanges == 1)
    }

    @Test func effectsAreCancelledWhenTheStoreGoesAway() async throws {
        let clock = TestClock()
        var store: Store<Counter.State, Counter.Action>? = Store(initialState: Counter.State()) {
            Counter()
        } withDependencies: {
            $0.continuousClock = clock
        }
        let task = store!.send(.startTicking)
        #expect(store!.runningEffects == 1)
        store = nil
        await task.finish()
        #expect(task.isCancelled)
    }

    @Test func anActionSentAfterShutDownIsReportedAndIgnored() async {
        let store = Store(initialState: Counter.State()) { Counter() }
        store.shutDown()
        withKnownIssue {
            store.send(.increment)
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("store that has shut down")
        }
        #expect(store.count == 0)
    }

    @Test func waitUntilIdleReturnsWhenEffectsAreDone() async {
        let store = Store(initialState: Counter.State()) { Counter() }
        store.send(.incrementLater)
        await store.waitUntilIdle()
        #expect(store.runningEffects == 0)
        #expect(store.count == 1)
    }

    @Test func statesEndWhenTheStoreShutsDown() async {
        let store = Store(initialState: Counter.State()) { Counter() }
        let states = store.states
        store.send(.increment)
        store.shutDown()
        var seen: [Int] = []
        for await state in states { seen.append(state.count) }
        #expect(seen.last == 1)
    }
}
