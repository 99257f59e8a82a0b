import CustomDump
import Foundation
import Testing

@testable import FeatureStore

@MainActor
@Suite struct IfCaseLetTests {
    @Test func runsTheChildInItsCaseAndCancelsItsEffectsWhenTheCaseGoes() async {
        let clock = TestClock()
        let store = TestStore(initialState: Session.State.loggedOut) {
            Session()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.logIn(id: 1)) { $0 = .loggedIn(Counter.State(id: 1)) }
        await store.send(.counter(.increment)) { $0 = .loggedIn(Counter.State(id: 1, count: 1)) }
        await store.send(.counter(.startTicking))
        await clock.advance(by: .seconds(1))
        await store.receive(.counter(.tick)) { $0 = .loggedIn(Counter.State(id: 1, count: 2)) }
        // Leaving the case ends the child's timer: nothing is left running.
        await store.send(.logOut) { $0 = .loggedOut }
        await clock.advance(by: .seconds(5))
        await store.finish()
    }

    @Test func anotherChildInTheSameCaseDoesNotInheritTheOldOnesEffects() async {
        let clock = TestClock()
        let store = TestStore(initialState: Session.State.loggedIn(Counter.State(id: 1))) {
            Session()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.counter(.startTicking))
        await store.send(.logIn(id: 2)) { $0 = .loggedIn(Counter.State(id: 2)) }
        await clock.advance(by: .seconds(3))
        await store.finish()
    }

    @Test func theChildsCancellationIDsAreItsOwn() async {
        let clock = TestClock()
        let store = TestStore(initialState: Session.State.loggedIn(Counter.State())) {
            Session()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.startOwnTicking)
        await store.send(.counter(.stopTicking))
        await clock.advance(by: .seconds(1))
        await store.receive(.ownTick)
        await store.finish()
    }

    @Test func aChildActionInAnotherCaseIsReported() async {
        let store = TestStore(initialState: Session.State.loggedOut) { Session() }
        await withKnownIssue {
            await store.send(.counter(.increment))
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("while the state was in another case")
        }
    }
}

@MainActor
@Suite struct StackTests {
    @Test func elementsAreRoutedByIDAndPoppedElementsEffectsEnd() async {
        let clock = TestClock()
        let store = TestStore(initialState: Navigator.State()) {
            Navigator()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.pushCounter) { $0.path.append(.counter(Counter.State())) }
        await store.send(.pushNote("hello")) { $0.path.append(.note(Note.State(text: "hello"))) }
        await store.send(.pushCounter) { $0.path.append(.counter(Counter.State())) }
        #expect(store.state.path.ids == [0, 1, 2])
        await store.send(.path(.element(id: 1, action: .note(.edit("hi"))))) {
            $0.path[id: 1] = .note(Note.State(text: "hi"))
        }
        // Half a second apart, so that their ticks come in a known order.
        await store.send(.path(.element(id: 0, action: .counter(.startTicking))))
        await clock.advance(by: .milliseconds(500))
        await store.send(.path(.element(id: 2, action: .counter(.startTicking))))
        await clock.advance(by: .milliseconds(500))
        await store.receive(.path(.element(id: 0, action: .counter(.tick)))) {
            $0.path[id: 0] = .counter(Counter.State(count: 1))
            $0.seen = ["tick of #0"]
        }
        await clock.advance(by: .milliseconds(500))
        await store.receive(.path(.element(id: 2, action: .counter(.tick)))) {
            $0.path[id: 2] = .counter(Counter.State(count: 1))
            $0.seen.append("tick of #2")
        }
        // Popping from #1 pops #2 too: its timer ends, #0's goes on.
        await store.send(.path(.popFrom(id: 1))) {
            $0.seen.append("popping #1, 3 on the stack")
            $0.path.pop(from: 1)
        }
        await clock.advance(by: .milliseconds(500))
        await store.receive(.path(.element(id: 0, action: .counter(.tick)))) {
            $0.path[id: 0] = .counter(Counter.State(count: 2))
            $0.seen.append("tick of #0")
        }
        // A removal by the parent ends the element's effects too.
        await store.send(.popLast) { $0.path.removeLast() }
        await clock.advance(by: .seconds(3))
        await store.finish()
    }

    @Test func aPushActionPushesAfterTheParentAndIDsCountOnFromIt() async {
        let store = TestStore(initialState: Navigator.State()) { Navigator() }
        await store.send(.path(.push(id: 5, state: .note(Note.State(text: "five"))))) {
            $0.seen = ["pushing #5"]
            $0.path.push(.note(Note.State(text: "five")), id: 5)
        }
        await store.send(.pushCounter) { $0.path.append(.counter(Counter.State())) }
        #expect(store.state.path.ids == [5, 6])
        await withKnownIssue {
            await store.send(.path(.push(id: 6, state: .note(Note.State(text: "again"))))) {
                $0.seen.append("pushing #6")
            }
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("already on the stack")
        }
    }

    @Test func actionsForElementsNotOnTheStackAreReported() async {
        let store = TestStore(initialState: Navigator.State()) { Navigator() }
        await withKnownIssue {
            await store.send(.path(.element(id: 3, action: .note(.edit("x")))))
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("which is not on the stack")
        }
        await withKnownIssue {
            await store.send(.path(.popFrom(id: 3))) { $0.seen = ["popping #3, 0 on the stack"] }
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("nothing was popped")
        }
    }

    @Test func aStackAssignedOverAnotherEndsTheOldElementsEffects() async {
        let clock = TestClock()
        let store = TestStore(initialState: Navigator.State()) {
            Navigator()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.pushCounter) { $0.path.append(.counter(Counter.State())) }
        await store.send(.path(.element(id: 0, action: .counter(.startTicking))))
        // The new stack's element is #0 too, but another element: the old timer must not tick into it.
        await store.send(.replaceStack)
        await clock.advance(by: .seconds(3))
        await store.finish()
    }

    @Test func theParentsCancelReachesEveryElement() async {
        let clock = TestClock()
        let store = TestStore(initialState: Navigator.State()) {
            Navigator()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.pushCounter) { $0.path.append(.counter(Counter.State())) }
        await store.send(.pushCounter) { $0.path.append(.counter(Counter.State())) }
        await store.send(.path(.element(id: 0, action: .counter(.startTicking))))
        await store.send(.path(.element(id: 1, action: .counter(.startTicking))))
        await store.send(.tickEverywhere)
        await clock.advance(by: .seconds(3))
        await store.finish()
    }

    @Test func aScopeOverAnotherCaseReports() async {
        let store = TestStore(initialState: Navigator.State(path: [.note(Note.State(text: "n"))])) { Navigator() }
        await withKnownIssue {
            await store.send(.path(.element(id: 0, action: .counter(.increment))))
        } matching: { issue in
            issue.comments.map(\.rawValue).joined().contains("A \"Scope\"")
        }
    }

    @Test func aStackDiffNamesTheElementsByID() {
        let before: StackState<Screen.State> = [.note(Note.State(text: "a")), .counter(Counter.State())]
        var after = before
        after[id: 1] = .counter(Counter.State(count: 1))
        let difference = diff(before, after) ?? ""
        let lines = difference.split(separator: "\n")
        #expect(difference.contains("#1: .counter("))
        #expect(lines.contains { $0.hasPrefix("-") && $0.contains("count: 0") })
        #expect(lines.contains { $0.hasPrefix("+") && $0.contains("count: 1") })
        #expect(!lines.contains { $0.hasPrefix("-") && $0.contains("text") })
    }

    @Test func stackStateIsACollectionWithStableIDs() throws {
        var stack = StackState<String>(["a", "b", "c"])
        #expect(Array(stack) == ["a", "b", "c"])
        #expect(stack.ids == [0, 1, 2])
        stack.removeLast()
        stack.append("d")
        #expect(stack.ids == [0, 1, 3])
        #expect(stack[id: 3] == "d")
        #expect(stack[id: 2] == nil)
        stack.pop(to: 0)
        #expect(Array(stack) == ["a"])
        stack[id: 0] = nil
        #expect(stack.isEmpty)
        #expect(stack.push("e") == 4)
        stack.append("f")
        stack.swapAt(0, 1)
        #expect(Array(stack) == ["f", "e"])
        #expect(stack.ids == [5, 4])
        // Emptied, it is still the same stack: its ids go on, never reused.
        stack.removeAll()
        #expect(stack.push("g") == 6)

        let saved = try JSONEncoder().encode(StackState(["x", "y"]))
        #expect(String(decoding: saved, as: UTF8.self) == #"["x","y"]"#)
        let restored = try JSONDecoder().decode(StackState<String>.self, from: saved)
        #expect(Array(restored) == ["x", "y"])
        #expect(restored.ids == [0, 1])
    }
}
