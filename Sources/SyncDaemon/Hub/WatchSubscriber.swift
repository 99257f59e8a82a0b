import NIOCore

/// Where a watch's frames go: in syncd, one client connection.
protocol WatchSubscriber: AnyObject, Sendable {
    /// Queues already-encoded frames for the peer, in order, and flushes them once.
    ///
    /// Called with the engine's lock held, so frames from different calls reach the peer in the
    /// order the engine produced them. It must only hand the buffers over, never block.
    func send(_ frames: [ByteBuffer])
}
