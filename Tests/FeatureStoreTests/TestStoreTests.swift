import FeatureStore
import Testing

@MainActor
@Suite struct TestStoreTests {
    @Test func sendAssertsTheExactChange() async {
        let store = TestStore(initialState: Counter.State()) { Counter() }
        await store.send(.increment) { $0.count = 1 }
        await store.finish()
    }

    @Test func receiveChecksActionsFromEffects() async {
        let store = TestStore(initialState: Counter.State()) { Counter() }
        await store.send(.incrementLater)
        await store.receive(.increment) { $0.count = 1 }
        await store.finish()
    }

    @Test func receiveByCasePath() async {
        let store = TestStore(initialState: Counter.State()) { Counter() }
        await store.send(.fail)
        await store.receive(\.failed) { $0.log = ["Boom()"] }
        await store.finish()
    }

    @Test func concatenateRunsInOrderAndEffectsUseTheTestClock() async {
        let clock = TestClock()
        let store = TestStore(initialState: Counter.State()) {
            Counter()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.incrementTwiceInOrder)
        await clock.advance(by: .milliseconds(20))
        await store.receive(.echo("first")) { $0.log = ["first"] }
        await store.receive(.echo("second")) { $0.log = ["first", "second"] }
        await store.finish()
    }

    @Test func cancellableEffectsStopOnCancel() async {
        let clock = TestClock()
        let store = TestStore(initialState: Counter.State()) {
            Counter()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.startTicking)
        // One second at a time: each tick's effect must be back asleep before time moves on.
        await clock.advance(by: .seconds(1))
        await store.receive(.tick) { $0.count = 1 }
        await clock.advance(by: .seconds(1))
        await store.receive(.tick) { $0.count = 2 }
        // Restarting cancels the running timer: only the new one ticks.
        await store.send(.startTicking)
        await clock.advance(by: .seconds(1))
        await store.receive(.tick) { $0.count = 3 }
        await store.send(.stopTicking)
        await clock.advance(by: .seconds(5))
        await store.finish()
    }

    @Test func noEffectMadeCancellableCancelsNothingAsInTCA() async {
        enum Action: Equatable, Sendable { case start, nothing, tick, stop }
        let clock = TestClock()
        let store = TestStore(initialState: 0) {
            Reduce<Int, Action> { count, action in
                switch action {
                case .start:
                    return .run { send in
                        while true {
                            try await clock.sleep(for: .seconds(1))
                            await send(.tick)
                        }
                    }
                    .cancellable(id: "ticks")
                case .nothing:
                    // TCA returns `.none` as it is: there is no effect to start, so none to replace.
                    return Effect<Action>.none.cancellable(id: "ticks", cancelInFlight: true)
                case .tick:
                    count += 1
                    return .none
                case .stop:
                    return .cancel(id: "ticks")
                }
            }
        }
        await store.send(.start)
        await store.send(.nothing)
        await clock.advance(by: .seconds(1))
        await store.receive(.tick) { $0 = 1 }
        await store.send(.stop)
        await store.finish()
    }

    @Test func aWrongExpectationFailsWithADiff() async {
        let store = TestStore(initialState: Counter.State()) { Counter() }
        await withKnownIssue {
            await store.send(.increment) { $0.count = 2 }
        } matching: { issue in
            let text = issue.comments.map(\.rawValue).joined()
            return text.contains("does not match") && text.contains("−") && text.contains("+")
        }
        #expect(store.state.count == 1)
    }

    @Test func anUnassertedChangeFails() async {
        let store = TestStore(initialState: Counter.State()) { Counter() }
        await withKnownIssue {
            await store.send(.increment)
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("did not say how")
        }
    }

    @Test func unreceivedActionsFailTheNextSendAndFinish() async {
        let store = TestStore(initialState: Counter.State()) { Counter() }
        await store.send(.incrementLater)
        try? await Task.sleep(for: .milliseconds(50))
        await withKnownIssue {
            // The received increment was not handled, so the asserted state lags behind by one.
            await store.send(.increment) { $0.count = 2 }
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("Must handle 1 received action")
        }
        await withKnownIssue {
            await store.finish()
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("did not handle")
        }
    }

    @Test func aLongLivedEffectFailsFinish() async {
        let clock = TestClock()
        let store = TestStore(initialState: Counter.State()) {
            Counter()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.startTicking)
        await withKnownIssue {
            await store.finish(timeout: .milliseconds(50))
        } matching: { issue in
            // Names the effect by where it was made.
            let text = issue.comments.map(\.rawValue).joined()
            return text.contains("still running") && text.contains("Features.swift:")
        }
    }

    @Test func skipInFlightEffectsLetsATestEndEarly() async {
        let clock = TestClock()
        let store = TestStore(initialState: Counter.State()) {
            Counter()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.startTicking)
        await store.skipInFlightEffects()
        await store.finish()
    }

    @Test func receivingTheWrongActionFails() async {
        let store = TestStore(initialState: Counter.State()) { Counter() }
        await store.send(.incrementLater)
        await withKnownIssue {
            await store.receive(.tick)
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("Expected to receive")
        }
        await store.finish()
    }

    @Test func receivingAnotherCaseNamesTheCaseTheTestWrote() async {
        let store = TestStore(initialState: Counter.State()) { Counter() }
        await store.send(.incrementLater)
        await withKnownIssue {
            await store.receive(\.echo) { $0.count = 1 }
        } matching: { issue in
            let text = issue.comments.map(\.rawValue).joined()
            return text.contains("Expected to receive an action of case \\.echo, but received:") && text.contains("increment")
        }
        await store.send(.incrementLater)
        await withKnownIssue {
            await store.receive(\.echo, "hello", timeout: .milliseconds(200))
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains(#"an action of case \.echo carrying "hello""#)
        }
        await store.finish()
    }

    @Test func anUnhandledEffectErrorIsReported() async {
        let store = TestStore(initialState: Counter.State()) { Counter() }
        await withKnownIssue {
            await store.send(.throwUnhandled)
            await store.finish()
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("An effect threw an error that nothing handled")
        }
    }

    @Test func nonExhaustiveChecksOnlyWhatIsAsserted() async {
        let store = TestStore(initialState: Counter.State(log: ["old"])) { Counter() }
        store.exhaustivity = .off
        await store.send(.echo("x")) { $0.count = 0 }
        await store.send(.incrementLater)
        await store.send(.incrementLater)
        await store.receive(.increment) { $0.count = 1 }
        await store.receive(.increment) { $0.count = 2 }
        await store.finish()
    }

    @Test func skipReceivedActionsTakesTheirState() async {
        let store = TestStore(initialState: Counter.State()) { Counter() }
        await store.send(.incrementLater)
        try? await Task.sleep(for: .milliseconds(50))
        await store.skipReceivedActions()
        #expect(store.state.count == 1)
        await store.finish()
    }

    @Test func concatenateDoesNotWaitForTheEffectsOfActionsItSends() async {
        let clock = TestClock()
        let store = TestStore(initialState: Counter.State()) {
            Counter()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.startThenEcho)
        await store.receive(.startTicking)
        await store.receive(.echo("after")) { $0.log = ["after"] }
        await store.send(.stopTicking)
        await store.finish()
    }
}

/// What a test that ends early, waits too long, or asserts less is told.
@MainActor
@Suite struct TestStoreEndingTests {
    @Test func aTestThatLeavesAnActionUnreceivedFailsWhenTheStoreGoesAway() async {
        await withKnownIssue {
            await leaveAnActionUnreceived()
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("did not handle")
        }
    }

    @Test func aTestThatLeavesAnEffectRunningFailsWhenTheStoreGoesAway() async {
        await withKnownIssue {
            await leaveAnEffectRunning()
        } matching: { issue in
            let text = issue.comments.map(\.rawValue).joined()
            return text.contains("still running") && text.contains("Features.swift:")
        }
    }

    /// Returns without `finish()`: the store's deinit, at the end of this function, must fail
    /// the test.
    private func leaveAnActionUnreceived() async {
        let store = TestStore(initialState: Counter.State()) { Counter() }
        await store.send(.incrementLater)
        try? await Task.sleep(for: .milliseconds(50))
    }

    private func leaveAnEffectRunning() async {
        let clock = TestClock()
        let store = TestStore(initialState: Counter.State()) {
            Counter()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.startTicking)
    }

    @Test func aSentActionsFinishFailsAfterItsTimeout() async {
        let clock = TestClock()
        let store = TestStore(initialState: Loader.State()) {
            Loader()
        } withDependencies: {
            $0.continuousClock = clock
        }
        let task = await store.send(.load)
        await withKnownIssue {
            await task.finish(timeout: .milliseconds(50))
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("Expected the effects to finish")
        }
        await store.receive(.loaded) { $0.isLoaded = true }
        await store.finish()
    }

    @Test func aSentActionsFinishWaitsForWhatFollowed() async {
        let store = TestStore(initialState: Loader.State()) {
            Loader()
        } withDependencies: {
            $0.continuousClock = ImmediateClock()
        }
        await store.send(.load).finish()
        await store.receive(.loaded) { $0.isLoaded = true }
        await store.receive(.saved) { $0.isSaved = true }
        await store.finish()
    }

    @Test func aReducerMadeByTheTestStoreSeesItsDependencies() async {
        let store = TestStore(initialState: NameReader.State()) {
            NameReader()
        } withDependencies: {
            $0.featureName = "override"
        }
        await store.send(.read) {
            $0.atInit = "override"
            $0.inReducer = "override"
        }
        await store.receive(.readInEffect("override")) { $0.inEffect = "override" }
        await store.finish()
    }

    @Test func dependenciesCanChangeDuringATest() async {
        let store = TestStore(initialState: NameReader.State()) {
            NameReader()
        } withDependencies: {
            $0.featureName = "first"
        }
        store.dependencies.featureName = "second"
        await store.send(.read) {
            $0.atInit = "first"
            $0.inReducer = "second"
        }
        await store.receive(.readInEffect("second")) { $0.inEffect = "second" }
        await store.finish()
    }

    @Test func skippedAssertionsCanBeShownWithoutFailing() async {
        let store = TestStore(initialState: Counter.State()) { Counter() }
        store.exhaustivity = .off(showSkippedAssertions: true)
        await store.send(.increment)
        await store.send(.incrementLater)
        await store.send(.incrementLater)
        await store.receive(.increment) { $0.count = 2 }
        await store.finish()
    }

    @Test func withExhaustivityAppliesToItsBodyOnly() async {
        let store = TestStore(initialState: Counter.State()) { Counter() }
        await store.withExhaustivity(.off) {
            await store.send(.increment)
        }
        #expect(store.exhaustivity == .on)
        await withKnownIssue {
            await store.send(.increment)
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("did not say how")
        }
    }

    @Test func skipInFlightEffectsWhenNoneRunIsReportedWhenStrict() async {
        let store = TestStore(initialState: Counter.State()) { Counter() }
        await withKnownIssue {
            await store.skipInFlightEffects()
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("no in-flight effects")
        }
        await store.skipInFlightEffects(strict: false)
        await store.finish()
    }

    @Test func receiveWithAPredicate() async {
        let store = TestStore(initialState: Counter.State()) { Counter() }
        await store.send(.incrementLater)
        await store.receive({ $0 == .increment }) { $0.count = 1 }
        await store.finish()
    }

    @Test func assertChecksTheStateWithoutAnAction() async {
        let store = TestStore(initialState: Counter.State()) { Counter() }
        store.exhaustivity = .off
        await store.send(.incrementLater)
        await store.skipReceivedActions()
        store.assert { $0.count = 1 }
        withKnownIssue {
            store.assert { $0.count = 5 }
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("does not match")
        }
        await store.finish()
    }
}
