import Foundation
import SharedState
import Testing

/// `MainEventLoop.clock` in a process that does not run `MainEventLoop` (this test process): it
/// sleeps as `ContinuousClock` does. Under `MainEventLoop` it is checked in a real feature
/// process (`MainEventLoopTests`, through `feature-bench sleep`).
@Suite(.timeLimit(.minutes(1))) struct MainEventLoopClockTests {
    @Test func withoutTheMainEventLoopItSleepsUntilTheDeadline() async throws {
        let clock = MainEventLoop.clock
        for milliseconds in [1, 5, 20] {
            let deadline = clock.now.advanced(by: .milliseconds(milliseconds))
            try await clock.sleep(until: deadline)
            #expect(clock.now >= deadline)
        }
        // A deadline already passed returns at once.
        try await clock.sleep(until: clock.now.advanced(by: .seconds(-1)))
    }

    @Test func aCancelledSleepThrowsCancellationError() async throws {
        let sleeper = Task { try await MainEventLoop.clock.sleep(until: .now.advanced(by: .seconds(30))) }
        try await Task.sleep(for: .milliseconds(20))
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
    }

    @Test func itsInstantsAreContinuousClocks() {
        let before = ContinuousClock.now
        let now = MainEventLoop.clock.now
        #expect(now >= before && now <= ContinuousClock.now)
    }
}
