import Foundation
import SharedStateWire

/// What one round of the engine's output holds (a commit's events and answers, a watch's start, a
/// progress round), as values, for the ``DeliverySink`` to turn into frames.
///
/// Messages about changes name a revision by its index in ``revisions``, so a revision that
/// reaches many watches is held once.
package struct DeliveryRound: Sendable {
    /// One subscriber's messages, by watch, in the order they go out.
    package struct Outbox: Sendable {
        package let subscriber: any WatchSubscriber
        /// What the sink made ahead of time for the subscriber (``DeliverySink/prepare(_:revisions:)``),
        /// which goes before ``messages``.
        package var prepared: (any PreparedOutput)? = nil
        package var messages: [(watchID: UInt64, message: WatchMessage)]
    }

    /// A target's answers, in the order its writes were submitted.
    package struct Answers: Sendable {
        package let target: any WriteAnswerTarget
        package var answers: AnswerList
    }

    /// One answer, or several: the lone write's answer needs no array.
    package enum AnswerList: Sendable {
        case one(WriteAnswer)
        case many([WriteAnswer])
    }

    /// The revisions that ``WatchMessage/changes(revision:selected:withPrevious:)`` names.
    package internal(set) var revisions: [CommittedRevision] = []
    /// Each subscriber's messages, in the order the subscribers were first reached.
    package internal(set) var outboxes: [Outbox] = []
    /// The answers, in the order their targets first appear in the commit: the first target's
    /// held in place (a lone write's needs no array), the others after it.
    package internal(set) var firstAnswers: Answers?
    package internal(set) var otherAnswers: [Answers] = []
    /// Run by each event loop that writes this round's messages, once it has (it times delivery).
    package internal(set) var afterWriting: (@Sendable () -> Void)?
    /// Whether it carries revisions as they are published (counted per subscriber as events
    /// delivered live), not a watch's start, catch-up or progress.
    package internal(set) var isLive = false

    init() {}

    /// A round of `messages` for one subscriber.
    init(_ messages: [(watchID: UInt64, message: WatchMessage)], for subscriber: any WatchSubscriber, revisions: [CommittedRevision] = []) {
        self.revisions = revisions
        if !messages.isEmpty { outboxes = [Outbox(subscriber: subscriber, messages: messages)] }
    }

    /// A round of what the sink prepared for `subscriber`, then `messages`.
    init(
        prepared: any PreparedOutput, then messages: [(watchID: UInt64, message: WatchMessage)], for subscriber: any WatchSubscriber,
        revisions: [CommittedRevision]
    ) {
        self.revisions = revisions
        outboxes = [Outbox(subscriber: subscriber, prepared: prepared, messages: messages)]
    }

    /// Whether it holds nothing to hand over.
    var isEmpty: Bool { outboxes.isEmpty && firstAnswers == nil }

    /// Adds a target's answers, after those added before.
    mutating func add(_ answers: Answers) {
        if firstAnswers == nil { firstAnswers = answers } else { otherAnswers.append(answers) }
    }
}

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
