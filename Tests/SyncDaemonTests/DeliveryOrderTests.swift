import Dispatch
import Synchronization
import Testing

@testable import SyncEngine

/// The order the engine's rounds reach its sink in: the order they were made under the state
/// lock, one at a time, each before its maker goes on, whichever thread hands it over.
@Suite struct DeliveryOrderTests {
    /// Records the number each round carries (as a progress notice's revision) in the order the
    /// rounds arrive, and whether two ever arrived at once.
    final class RecordingSink: DeliverySink {
        let arrived = Mutex<[UInt64]>([])
        let inside = Atomic<Int>(0)
        let overlapped = Atomic<Bool>(false)

        func deliver(_ round: DeliveryRound) -> (@Sendable () -> Void)? {
            if inside.add(1, ordering: .acquiringAndReleasing).newValue > 1 { overlapped.store(true, ordering: .relaxed) }
            for outbox in round.outboxes {
                for (_, message) in outbox.messages {
                    if case .progress(let number) = message { arrived.withLock { $0.append(number) } }
                }
            }
            inside.subtract(1, ordering: .acquiringAndReleasing)
            return nil
        }

        func prepare(_ messages: [(watchID: UInt64, message: WatchMessage)], revisions: [CommittedRevision]) -> any PreparedOutput {
            Nothing()
        }

        struct Nothing: PreparedOutput {}
    }

    final class Subscriber: WatchSubscriber {
        let backlog = Backlog()
    }

    @Test func roundsReachTheSinkInTheOrderTheyWereMadeAndBeforeTheirMakersGoOn() {
        let sink = RecordingSink()
        let order = DeliveryOrder(sink: sink)
        let subscriber = Subscriber()
        // The engine's state: the next number, and the rounds that wait in line.
        let state = Mutex<(next: UInt64, waiting: [DeliveryRound])>((0, []))
        let late = Atomic<Int>(0)
        let makers = 4
        let roundsEach = 3_000
        DispatchQueue.concurrentPerform(iterations: makers) { _ in
            for _ in 0..<roundsEach {
                let (place, number) = state.withLock { state in
                    state.next += 1
                    let round = DeliveryRound([(1, .progress(revision: state.next))], for: subscriber)
                    return (order.place(round, waiting: &state.waiting), state.next)
                }
                order.handOver(place) {
                    state.withLock { state in
                        var waiting: [DeliveryRound] = []
                        swap(&waiting, &state.waiting)
                        return waiting
                    }
                }
                // Handed over, by this thread or another, before the maker goes on.
                if !sink.arrived.withLock({ $0.contains(number) }) { late.add(1, ordering: .relaxed) }
            }
        }
        #expect(sink.arrived.withLock { $0 } == Array(1...UInt64(makers * roundsEach)))
        let lateCount = late.load(ordering: .relaxed)
        let overlapped = sink.overlapped.load(ordering: .relaxed)
        #expect(lateCount == 0)
        #expect(!overlapped)
        #expect(state.withLock { $0.waiting.isEmpty })
    }

    @Test func anEmptyRoundIsNotHandedOver() {
        let sink = RecordingSink()
        let order = DeliveryOrder(sink: sink)
        var waiting: [DeliveryRound] = []
        guard case .nothing = order.place(DeliveryRound(), waiting: &waiting) else {
            Issue.record("an empty round took the hand-off")
            return
        }
        #expect(waiting.isEmpty)
    }
}
