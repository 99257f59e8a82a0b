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

/// What `send` returns and when it reduces, as in TCA.
@MainActor
@Suite struct StoreSendTests {
    @Test func finishAwaitsTheEffectsOfTheActionsEffectsSend() async {
        let store = Store(initialState: Loader.State()) {
            Loader()
        } withDependencies: {
            $0.continuousClock = ImmediateClock()
        }
        await store.send(.load).finish()
        #expect(store.isLoaded)
        #expect(store.isSaved)
        #expect(store.runningEffects == 0)
    }

    @Test func cancelReachesTheEffectsOfTheActionsEffectsSend() async {
        let clock = TestClock()
        let store = Store(initialState: Loader.State()) {
            Loader()
        } withDependencies: {
            $0.continuousClock = clock
        }
        let task = store.send(.load)
        while !store.isLoaded { await Task.yield() }
        task.cancel()
        await task.finish()
        #expect(store.runningEffects == 0)
        #expect(!store.isSaved)
        #expect(task.isCancelled)
    }

    @Test func concatenatedSendsAreReducedInsideSend() {
        let store = Store(initialState: Counter.State()) { Counter() }
        store.send(.echoBothInOrder)
        #expect(store.log == ["a", "b"])
    }

    @Test func aSendFromInsideAReducerIsReported() async {
        final class StoreBox { var store: Store<Counter.State, Counter.Action>? }
        let box = StoreBox()
        let store = Store(initialState: Counter.State()) {
            Reduce<Counter.State, Counter.Action> { state, action in
                if case .echo("outer") = action { box.store?.send(.echo("inner")) }
                if case .echo(let text) = action { state.log.append(text) }
                return .none
            }
        }
        box.store = store
        withKnownIssue {
            store.send(.echo("outer"))
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("while its reducer was running")
        }
        // Still reduced, after the action that sent it.
        #expect(store.log == ["outer", "inner"])
    }

    @Test func aSendAfterTheEffectFinishedIsReported() async {
        final class KeptSend: @unchecked Sendable {
            // Written once by the effect, read after it finished.
            var send: Send<Counter.Action>?
        }
        let kept = KeptSend()
        let store = Store(initialState: Counter.State()) {
            Reduce<Counter.State, Counter.Action> { state, action in
                switch action {
                case .startTicking:
                    return .run { send in kept.send = send }
                case .echo(let text):
                    state.log.append(text)
                    return .none
                default:
                    return .none
                }
            }
        }
        await store.send(.startTicking).finish()
        withKnownIssue {
            kept.send?(.echo("late"))
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("effect that had already finished")
        }
        #expect(store.log == ["late"])
    }
}
