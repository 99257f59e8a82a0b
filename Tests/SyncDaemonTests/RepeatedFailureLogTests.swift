import Testing

@testable import SyncEngine

/// A failure that repeats (``RepeatedFailureLog``) is logged at once, then once per interval with
/// the count since the last line, and once more when it stops.
@Suite struct RepeatedFailureLogTests {
    @Test func theFirstFailureIsLoggedThenOncePerIntervalWithACount() {
        var log = RepeatedFailureLog(interval: .seconds(10))
        let start = ContinuousClock.now
        #expect(log.failed(at: start) == 1)
        for second in 1...9 { #expect(log.failed(at: start + .seconds(second)) == nil) }
        #expect(log.failed(at: start + .seconds(10)) == 10)
        #expect(log.failed(at: start + .seconds(11)) == nil)
        #expect(log.succeeded() == 12)
        // After a success, the next failure is news again.
        #expect(log.succeeded() == nil)
        #expect(log.failed(at: start + .seconds(12)) == 1)
    }
}
