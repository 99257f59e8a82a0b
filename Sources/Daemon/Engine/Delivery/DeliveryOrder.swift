import Foundation

/// Hands the engine's rounds to its ``DeliverySink`` in the order they were made, without the
/// state lock held.
///
/// A round is made under the state lock, and placed in line there (``place(_:waiting:)``): the
/// maker takes the hand-off lock if it is free, and then hands over what waits and its own round,
/// in order (the usual case: nothing waits, and taking a free lock costs a few nanoseconds);
/// otherwise the round waits in the engine's state, in the order the state lock gave. Once the
/// state lock is released, ``handOver(_:takingWaiting:)`` hands the rounds to the sink, taking
/// the hand-off lock first if the maker could not. Whoever holds the hand-off lock hands over
/// every round that waits, so a round is handed over before its maker returns, by it or by
/// another thread, and rounds reach the sink one at a time in the order they were made.
///
/// The hand-off lock guards nothing but that order: reads and writes of the state never wait for
/// the sink. The lock order is hand-off, then state (the state lock only ever *tries* the
/// hand-off lock).
final class DeliveryOrder: @unchecked Sendable {
    /// Where a round stands once placed.
    enum Place {
        /// It was empty: nothing to hand over.
        case nothing
        /// The maker holds the hand-off lock, and hands over this round.
        case handsOver(DeliveryRound)
        /// The maker holds the hand-off lock, and hands over these rounds, its own last.
        case handsOverAfterOthers([DeliveryRound])
        /// It waits in line: the maker takes the hand-off lock, and every round waiting then.
        case waits
    }

    let sink: any DeliverySink
    private let handOffLock = NSLock()

    init(sink: any DeliverySink) {
        self.sink = sink
    }

    /// Places `round` in line; under the state lock, which `waiting` is part of.
    func place(_ round: DeliveryRound, waiting: inout [DeliveryRound]) -> Place {
        if round.isEmpty { return .nothing }
        guard handOffLock.try() else {
            waiting.append(round)
            return .waits
        }
        if waiting.isEmpty { return .handsOver(round) }
        var rounds: [DeliveryRound] = []
        swap(&rounds, &waiting)
        rounds.append(round)
        return .handsOverAfterOthers(rounds)
    }

    /// Hands over what ``place(_:waiting:)`` left to its maker, once the state lock is released;
    /// `takingWaiting` takes the rounds that wait, under the state lock. Then runs what the sink
    /// left for this thread, with no lock held.
    func handOver(_ place: Place, takingWaiting: () -> [DeliveryRound]) {
        switch place {
        case .nothing:
            return
        case .handsOver(let round):
            let work = sink.deliver(round)
            handOffLock.unlock()
            work?()
        case .handsOverAfterOthers(let rounds):
            handOver(rounds)
        case .waits:
            handOffLock.lock()
            handOver(takingWaiting())
        }
    }

    /// Hands `rounds` over in order, then releases the hand-off lock and runs what the sink left.
    private func handOver(_ rounds: [DeliveryRound]) {
        var left: [@Sendable () -> Void] = []
        for round in rounds {
            if let work = sink.deliver(round) { left.append(work) }
        }
        handOffLock.unlock()
        for work in left { work() }
    }
}
