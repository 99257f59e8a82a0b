import FeatureStore
import Synchronization
import Testing

/// Errors, names, dependencies and cancellation inside effects.
@MainActor
@Suite struct EffectTests {
    struct Boom: Error {}

    @Test func errorsOfACancelledEffectAreNotReported() async {
        let clock = TestClock()
        let store = Store(initialState: 0) {
            Reduce<Int, Bool> { _, start in
                guard start else { return .cancel(id: "work") }
                return .run { _ in
                    do {
                        try await clock.sleep(for: .seconds(1))
                    } catch {
                        throw Boom()  // its own error, thrown on its way out after cancellation
                    }
                }
                .cancellable(id: "work")
            }
        }
        store.send(true)
        await Task.yield()
        await store.send(false).finish()
        await store.waitUntilIdle()
        // Reaching here without an issue is the test: "nothing handled" would have failed it.
    }

    @Test func aCancellationErrorFromInnerWorkIsNotReported() async {
        let store = Store(initialState: 0) {
            Reduce<Int, Bool> { _, _ in
                .run { _ in
                    let inner = Task { throw CancellationError() }
                    try await inner.value
                }
            }
        }
        await store.send(true).finish()
    }

    @Test func effectsSeeTheDependenciesOfWhereTheyWereMade() async {
        let store = Store(initialState: NameReader.State()) {
            NameReader()
        } withDependencies: {
            $0.featureName = "store"
        }
        await store.send(.read).finish()
        #expect(store.inEffect == "store")
    }

    @Test func withTaskCancellationMakesPartOfAnEffectCancellableByID() async {
        let delivered = Mutex<[Int]>([])
        let clock = TestClock()
        let store = Store(initialState: 0) {
            Reduce<Int, Int> { _, query in
                .run { _ in
                    // A debounce: a newer query cancels the one still waiting.
                    try await withTaskCancellation(id: "search", cancelInFlight: true) {
                        try await clock.sleep(for: .milliseconds(300))
                        delivered.withLock { $0.append(query) }
                    }
                }
            }
        } withDependencies: {
            $0.continuousClock = clock
        }
        let first = store.send(1)
        await waitUntilSleeping(clock)
        let second = store.send(2)
        await first.finish()
        await waitUntilSleeping(clock)
        await clock.advance(by: .milliseconds(300))
        await second.finish()
        #expect(delivered.withLock { $0 } == [2])
    }

    @Test func taskCancelByIDCancelsAnotherEffectOfTheStore() async {
        let clock = TestClock()
        let store = Store(initialState: 0) {
            Reduce<Int, Bool> { _, startTimer in
                if startTimer {
                    return .run { _ in try await clock.sleep(for: .seconds(60)) }.cancellable(id: "timer")
                }
                return .run { _ in Task.cancel(id: "timer") }
            }
        } withDependencies: {
            $0.continuousClock = clock
        }
        let timer = store.send(true)
        await store.send(false).finish()
        await timer.finish()
        #expect(timer.isCancelled)
        #expect(store.runningEffects == 0)
    }

    @Test func aNamedEffectIsNamedWhenStillRunningAtTheEnd() async {
        let clock = TestClock()
        let store = TestStore(initialState: 0) {
            Reduce<Int, Bool> { _, _ in
                .run(name: "heartbeat") { _ in try await clock.sleep(for: .seconds(60)) }
            }
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(true)
        await withKnownIssue {
            await store.finish(timeout: .milliseconds(20))
        } matching: { issue in
            let text = issue.comments.map(\.rawValue).joined()
            return text.contains("\"heartbeat\"") && text.contains("EffectTests.swift:")
        }
    }

    private func waitUntilSleeping(_ clock: TestClock<Duration>) async {
        for _ in 0..<100 { await Task.yield() }
        try? await Task.sleep(for: .milliseconds(5))
    }
}
