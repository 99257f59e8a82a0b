import NIOCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The frames a connection's callers send, in the order they send them.
///
/// When nothing is waiting to go out, the caller's own thread writes its frame to the socket (a
/// non-blocking `send`), so a request leaves at once instead of after its event loop has been
/// woken: that wake-up was a third of a lone write's latency. Otherwise (the socket is full, or
/// earlier frames are still queued) frames queue here, and the loop is handed one task that
/// writes everything queued and flushes it with one system call, however many tasks send
/// meanwhile. Frames written directly never overtake queued ones: the direct path is taken only
/// while the channel holds nothing unwritten.
final class OutboundQueue: Sendable {
    private struct State {
        var frames: [ByteBuffer] = []
        /// Whether a task that hands `frames` to the channel is queued on the loop.
        var isScheduled = false
        /// Tasks that handed frames to the channel whose last frame is not yet in the socket.
        var inChannel = 0
        /// A duplicate of the channel's socket, for writes from the caller's thread; -1 once the
        /// channel closed. Closed here, under the lock, so a write never reaches a reused number.
        var descriptor: CInt
    }

    private let channel: any Channel
    private let state: Mutex<State>

    /// - Parameter descriptor: A duplicate of the channel's socket, which the queue now owns and
    ///   closes when the channel closes; -1 to always go through the channel.
    init(channel: any Channel, descriptor: CInt) {
        self.channel = channel
        self.state = Mutex(State(descriptor: descriptor))
        channel.closeFuture.whenComplete { [self] _ in
            state.withLock { state in
                if state.descriptor >= 0 { close(state.descriptor) }
                state.descriptor = -1
            }
        }
    }

    deinit {
        state.withLock { state in
            if state.descriptor >= 0 { close(state.descriptor) }
        }
    }

    /// Queues a frame, or writes it at once when nothing waits before it.
    func send(_ frame: ByteBuffer) {
        let mustSchedule = state.withLock { state in
            var frame = frame
            if state.frames.isEmpty, !state.isScheduled, state.inChannel == 0, state.descriptor >= 0,
                UnixSocket.writeWithoutBlocking(&frame, to: state.descriptor)
            {
                return false
            }
            // What the socket did not take (all of it, or the rest of a frame) goes through the
            // channel, which waits for the socket to drain or reports why it failed.
            state.frames.append(frame)
            defer { state.isScheduled = true }
            return !state.isScheduled
        }
        guard mustSchedule else { return }
        channel.eventLoop.execute { [self] in
            let frames = state.withLock { state in
                state.isScheduled = false
                state.inChannel += 1
                defer { state.frames.removeAll(keepingCapacity: true) }
                return state.frames
            }
            let written = channel.eventLoop.makePromise(of: Void.self)
            written.futureResult.whenComplete { [self] _ in
                state.withLock { $0.inChannel -= 1 }
            }
            for (index, frame) in frames.enumerated() {
                channel.write(frame, promise: index == frames.count - 1 ? written : nil)
            }
            if frames.isEmpty { written.succeed() }
            channel.flush()
        }
    }
}
