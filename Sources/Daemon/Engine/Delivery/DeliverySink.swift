/// Where the engine's output goes: in syncd, the server, which makes frames of the messages and
/// hands them to the connections' event loops.
package protocol DeliverySink: Sendable {
    /// Takes one round of output.
    ///
    /// Called outside the engine's state lock, one round at a time and in the order the engine
    /// made them (see ``DeliveryOrder``): what it hands each subscriber, in the order it hands it,
    /// is what that subscriber gets. It must only hand the work over, never block nor call the
    /// engine.
    ///
    /// - Returns: Work for the calling thread to run once the engine holds no lock, before the
    ///   thread does anything else (an event loop answering a write it committed itself), if any.
    func deliver(_ round: DeliveryRound) -> (@Sendable () -> Void)?

    /// Makes the output of `messages`, whose revisions are `revisions`, ahead of time, for a
    /// subscriber's ``DeliveryRound/Outbox/prepared``: what a watch is owed before it goes live (a
    /// replay, a large snapshot or resync) is encoded off every lock, on the thread that read it,
    /// and handed over later in a round, in its place in the order.
    func prepare(_ messages: [(watchID: UInt64, message: WatchMessage)], revisions: [CommittedRevision]) -> any PreparedOutput
}

/// Output a ``DeliverySink`` made ahead of time; the engine only carries it back to the sink.
package protocol PreparedOutput: Sendable {}
