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
