import CasePaths
import Testing

@testable import FeatureStore

/// Two effects side by side, whose actions come in no fixed order.
struct SideBySide: Reducer, Sendable {
    struct State: Equatable, Sendable {
        var seen: Set<String> = []
    }

    @CasePathable
    enum Action: Equatable, Sendable {
        case start
        case arrived(String)
    }

    func reduce(into state: inout State, action: Action) -> Effect<Action> {
        switch action {
        case .start:
            return .merge(
                .run { send in await send(.arrived("left")) },
                .run { send in await send(.arrived("right")) }
            )
        case .arrived(let name):
            state.seen.insert(name)
            return .none
        }
    }
}

@MainActor
@Suite struct ReceiveInAnyOrderTests {
    @Test func acceptsTheActionsInWhicheverOrderTheyCame() async {
        for _ in 0..<20 {
            let store = TestStore(initialState: SideBySide.State()) { SideBySide() }
            await store.send(.start)
            await store.receive(inAnyOrder: [.arrived("right"), .arrived("left")]) { $0.seen = ["left", "right"] }
            await store.finish()
        }
    }

    @Test func takesCasesAndPredicatesBesideActions() async {
        for _ in 0..<20 {
            let store = TestStore(initialState: SideBySide.State()) { SideBySide() }
            await store.send(.start)
            // The broad expectation is listed first: it must not take the action only the exact
            // one can take.
            await store.receive(inAnyOrder: [.matching(\.arrived), .action(.arrived("right"))]) { $0.seen = ["left", "right"] }
            await store.send(.start)
            await store.receive(inAnyOrder: [.matching { $0 == .arrived("left") }, .matching(\.arrived)])
            await store.finish()
        }
    }

    @Test func pairsEachActionWithAnExpectationItMeetsWhereverItIsListed() {
        let expected: [ExpectedAction<SideBySide.Action>] = [
            .matching(\.arrived), .matching { $0 == .arrived("left") }, .action(.arrived("up")),
        ]
        let pairs = ExpectedAction.pair(expected, with: [.arrived("left"), .arrived("up"), .arrived("right")])
        // "left" goes to the predicate that only it meets, "up" to its exact expectation, "right" to the case.
        #expect(pairs == [2, 0, 1])
        #expect(ExpectedAction.pair(expected, with: [.arrived("left")]).compactMap { $0 } == [0])
    }

    @Test func namesAPredicateThatNothingMetByItsLine() async {
        let store = TestStore(initialState: SideBySide.State()) { SideBySide() }
        await store.send(.start)
        await withKnownIssue {
            await store.receive(
                inAnyOrder: [.matching(\.arrived), .matching(\.arrived), .matching { $0 == .start }], timeout: .milliseconds(200))
        } matching: { issue in
            let text = issue.comments.map(\.rawValue).joined()
            return text.contains("1 action did not come")
                && text.contains("the predicate at FeatureStoreTests/ReceiveInAnyOrderTests.swift:")
        }
        await store.skipReceivedActions()
        await store.finish()
    }

    @Test func reportsAnActionThatWasNotExpected() async {
        let store = TestStore(initialState: SideBySide.State()) { SideBySide() }
        await store.send(.start)
        await withKnownIssue {
            await store.receive(inAnyOrder: [.arrived("left"), .arrived("up")]) { $0.seen = ["left", "right"] }
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("Expected to receive, in any order")
        }
        await store.finish()
    }

    @Test func reportsTheActionsThatDidNotCome() async {
        let store = TestStore(initialState: SideBySide.State()) { SideBySide() }
        await store.send(.start)
        await withKnownIssue {
            await store.receive(inAnyOrder: [.arrived("left"), .arrived("right"), .arrived("up")], timeout: .milliseconds(200))
        } matching: { issue in
            let text = issue.comments.map(\.rawValue).joined()
            return text.contains("1 action did not come") && text.contains(#"arrived("up")"#)
        }
        await store.skipReceivedActions()
        await store.finish()
    }

    @Test func checksTheStateAfterTheLastOfThem() async {
        let store = TestStore(initialState: SideBySide.State()) { SideBySide() }
        await store.send(.start)
        await withKnownIssue {
            await store.receive(inAnyOrder: [.arrived("left"), .arrived("right")]) { $0.seen = ["left"] }
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("does not match the expectation")
        }
        await store.finish()
    }
}
