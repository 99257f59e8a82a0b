import TestSupport
import Testing

@testable import SyncClient

@Suite struct BackoffTests {
    @Test func delaysDoubleUpToTheMaximumEachWithJitterInItsUpperHalf() {
        var generator = SeededGenerator(seed: 7)
        var backoff = Backoff(initial: .milliseconds(50), maximum: .milliseconds(400))
        let steps: [Duration] = [.milliseconds(50), .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(400)]
        var delays: [Duration] = []
        for step in steps {
            let delay = backoff.next(using: &generator)
            #expect(delay >= step / 2 && delay <= step, "\(delay) for a step of \(step)")
            delays.append(delay)
        }
        // Jittered: not every delay sits at the same point of its step.
        #expect(Set(zip(delays, steps).map { Int(($0.0 / $0.1) * 100) }).count > 1)
    }
}
