import Synchronization

/// Where a watch's messages go: in syncd, one client connection.
///
/// The engine keeps a subscriber only to tell subscribers apart and to hand it back in a
/// ``DeliveryRound``; of the subscriber itself it reads only its ``backlog``, once, before taking
/// its lock.
package protocol WatchSubscriber: AnyObject, Sendable {
    /// Whether the subscriber has fallen so far behind that its outbound queue is full: the
    /// engine then stops sending it changes and, once it catches up, sends a resync instead.
    var backlog: Backlog { get }
}

/// Whether a subscriber is backlogged: set by its owner, read by the engine under its lock.
package final class Backlog: Sendable {
    private let isSet = Atomic<Bool>(false)

    package init() {}

    /// Whether the subscriber's outbound queue is full.
    package var isBacklogged: Bool { isSet.load(ordering: .relaxed) }

    /// Records whether the subscriber is backlogged; returns whether it was.
    @discardableResult
    package func set(_ isBacklogged: Bool) -> Bool {
        isSet.exchange(isBacklogged, ordering: .relaxed)
    }
}
