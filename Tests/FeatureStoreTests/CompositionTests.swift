import Testing

@testable import FeatureStore

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

    @Test func scopeReachesACaseOfACase() async {
        let store = TestStore(initialState: Counter.State()) { CounterInParent() }
        await store.send(.parent(.counter(.increment))) { $0.count = 1 }
        await store.send(.parent(.showDetail))
        #expect(CounterInParent.Action.parent(.counter(.increment))[case: \.parent.counter] == .increment)
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

/// Cancellation scoped by navigation identity, and effects that outlive their child, as in TCA.
@MainActor
@Suite struct NavigationCancellationTests {
    @Test func aRowsEffectForTheActionThatRemovesItRuns() async {
        let deletions = CallCounter()
        let store = Store(initialState: RowList.State(rows: IdentifiedArray(uniqueElements: (1...100).map(Row.State.init)))) {
            RowList(deletions: deletions)
        }
        for id in 1...100 {
            store.send(.rows(.element(id: id, action: .deleteTapped)))
        }
        await store.waitUntilIdle()
        #expect(store.rows.isEmpty)
        #expect(deletions.value == 100)
    }

    @Test func anIfLetChildsEffectForTheActionThatDismissesItRuns() async {
        let deletions = CallCounter()
        for _ in 1...100 {
            let store = Store(initialState: RowList.State(detail: Row.State(id: 1))) { RowList(deletions: deletions) }
            store.send(.detail(.deleteTapped))
            #expect(store.detail == nil)
            await store.waitUntilIdle()
        }
        #expect(deletions.value == 100)
    }

    @Test func anIfCaseLetChildsEffectForTheActionThatLeavesItsCaseRuns() async {
        let deletions = CallCounter()
        for _ in 1...100 {
            let store = Store(initialState: RowScreen.State.row(Row.State(id: 1))) { RowScreen(deletions: deletions) }
            store.send(.row(.deleteTapped))
            #expect(store.state == .list)
            await store.waitUntilIdle()
        }
        #expect(deletions.value == 100)
    }

    @Test func aParentsCancelReachesItsChildrensEffectsUnderThatID() async {
        let clock = TestClock()
        let store = TestStore(initialState: Parent.State(rows: [Counter.State(id: 1), Counter.State(id: 2)])) {
            Parent()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.rows(.element(id: 1, action: .startTicking))) { $0.childChanges = 1 }
        await store.send(.rows(.element(id: 2, action: .startTicking))) { $0.childChanges = 2 }
        await store.send(.stopAllTicking)
        await clock.advance(by: .seconds(3))
        await store.finish()
    }

    @Test func aChildsCancelLeavesItsParentsEffectsUnderThatID() async {
        let clock = TestClock()
        let store = TestStore(initialState: Parent.State(rows: [Counter.State(id: 1)])) {
            Parent()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.counter(.startTicking)) { $0.childChanges = 1 }
        await store.send(.rows(.element(id: 1, action: .stopTicking))) { $0.childChanges = 2 }
        await clock.advance(by: .seconds(1))
        await store.receive(.counter(.tick)) {
            $0.counter.count = 1
            $0.childChanges = 3
        }
        await store.send(.counter(.stopTicking)) { $0.childChanges = 4 }
        await store.finish()
    }

    @Test func replacingTheIfLetChildByAnotherIDCancelsTheOldChildsEffects() async {
        let clock = TestClock()
        let store = TestStore(initialState: Parent.State()) {
            Parent()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.showDetail) { $0.detail = Counter.State() }
        await store.send(.detail(.startTicking)) { $0.childChanges = 1 }
        await store.send(.replaceDetail(id: 7)) { $0.detail = Counter.State(id: 7) }
        await clock.advance(by: .seconds(3))
        await store.finish()
    }

    @Test func aChildThatBecomesAnotherCaseEndsTheOldCasesEffects() async {
        let clock = TestClock()
        let store = TestStore(initialState: ModeHost.State(mode: .heating(0))) {
            ModeHost()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.mode(.startTicking))
        await store.send(.mode(.becomeCooling)) { $0.mode = .cooling(0) }
        await clock.advance(by: .seconds(3))
        await store.finish()
    }

    @Test func replacingTheIfLetChildByAnotherCaseCancelsTheOldCasesEffects() async {
        let clock = TestClock()
        let store = TestStore(initialState: ModeHost.State(mode: .heating(0))) {
            ModeHost()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.mode(.startTicking))
        await clock.advance(by: .seconds(1))
        await store.receive(.mode(.tick)) { $0.mode = .heating(1) }
        await store.send(.switchToCooling) { $0.mode = .cooling(0) }
        await clock.advance(by: .seconds(3))
        await store.finish()
    }
}

/// Dependencies overridden for a child reach its reducer and its effects.
@MainActor
@Suite struct DependencyModifierTests {
    @Test func aChildsOverrideReachesItsReducerAndItsEffects() async {
        let store = Store(initialState: NameReaderHost.State()) {
            NameReaderHost()
        } withDependencies: {
            $0.featureName = "store"
        }
        await store.send(.child(.read)).finish()
        #expect(store.child.inReducer == "child")
        #expect(store.child.inEffect == "child")
    }

    @Test func aChildsOverrideIsWhatATestStoreSees() async {
        let store = TestStore(initialState: NameReaderHost.State()) {
            NameReaderHost()
        } withDependencies: {
            $0.featureName = "store"
        }
        await store.send(.child(.read)) {
            $0.child.atInit = "store"
            $0.child.inReducer = "child"
        }
        await store.receive(.child(.readInEffect("child"))) { $0.child.inEffect = "child" }
        await store.finish()
    }

    @Test func transformDependencyChangesWhatTheReducerAndEffectsSee() async {
        let store = Store(initialState: NameReader.State()) {
            NameReader().transformDependency(\.featureName) { $0 += "+transformed" }
        } withDependencies: {
            $0.featureName = "store"
        }
        await store.send(.read).finish()
        #expect(store.inReducer == "store+transformed")
        #expect(store.inEffect == "store+transformed")
    }
}

/// A counter whose actions come two cases down: `Scope` takes `\.parent.counter`.
private struct CounterInParent: Reducer {
    @CasePathable
    enum Action: Equatable, Sendable {
        case parent(Parent.Action)
    }

    var body: some Reducer<Counter.State, Action> {
        Scope(state: \.self, action: \.parent.counter) { Counter() }
    }
}

/// Where cancellation ids are found in the feature tree.
@Suite struct EffectIDTests {
    private let outer = EffectScope(keyPath: \Parent.State.rows, identity: AnyHashable(7))

    @Test func anIDIsFoundAtItsPlaceAndAtEveryAncestors() {
        let id = EffectID("ticks", path: [outer])
        #expect(id.cancellationKeys == [EffectID("ticks"), id])
    }

    @Test func aChildsMarkerIsFoundOnlyAtItsOwnPlace() {
        // Element 5 of element 7's own children must not go when the root removes its element 5.
        let nested = EffectID.effects(ofChild: EffectScope(keyPath: \Parent.State.rows, identity: AnyHashable(5))).scoped(to: outer)
        #expect(nested.cancellationKeys == [nested])
    }
}
