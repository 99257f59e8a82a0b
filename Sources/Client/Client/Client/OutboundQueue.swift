import NIOCore
import SharedStateWire
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The frames a connection's callers send, in the order they send them.
///
/// A lone request (``send(_:mayWriteAtOnce:)`` with `true`), when nothing is waiting to go out,
/// is written to the socket by the caller's own thread (a non-blocking `send`), so it leaves at
/// once instead of after its event loop has been woken. Otherwise (requests that overlap, the
/// socket full, earlier frames still queued) frames queue here, and the loop is handed one task
/// that writes everything queued and flushes it with one system call, however many tasks send
/// meanwhile: pipelined requests written each at once would leave in a `send` each, and syncd
/// would read them one by one (D40). Frames written at once never overtake queued ones: that path
/// is taken only while the channel holds nothing unwritten (``DirectSocketWrites``, the rule
/// syncd's connections write by too).
final class OutboundQueue: Sendable {
    private struct State {
        var frames: [ByteBuffer] = []
        /// Whether a task that hands `frames` to the channel is queued on the loop.
        var isScheduled = false
        /// The tasks that handed frames to the channel whose last frame is not yet in the socket.
        var socket = DirectSocketWrites()
        /// A duplicate of the channel's socket, for writes from the caller's thread; -1 once the
        /// channel closed. Closed here, under the lock, so a write never reaches a reused number.
        var descriptor: CInt
    }

    private let channel: any Channel
    private let state: Mutex<State>
    private let writtenAtOnceByLoop = Atomic<Int>(0)

    /// Frames written at once by the thread of the channel's event loop: under ``MainEventLoop``,
    /// requests made on the main actor, which left without waking another thread.
    var framesWrittenAtOnceByLoop: Int { writtenAtOnceByLoop.load(ordering: .relaxed) }

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

    /// Queues a frame, or, with `mayWriteAtOnce`, writes it at once when nothing waits before it.
    func send(_ frame: ByteBuffer, mayWriteAtOnce: Bool) {
        let (wroteAtOnce, mustSchedule) = state.withLock { state in
            var frame = frame
            let descriptor = state.descriptor
            if mayWriteAtOnce, state.frames.isEmpty, !state.isScheduled, state.socket.mayWriteDirectly, descriptor >= 0,
                DirectSocketWrites.write(&frame, by: { sendWithoutWaiting(descriptor, $0) })
            {
                return (true, false)
            }
            // What the socket did not take (all of it, or the rest of a frame) goes through the
            // channel, which waits for the socket to drain or reports why it failed.
            state.frames.append(frame)
            defer { state.isScheduled = true }
            return (false, !state.isScheduled)
        }
        if wroteAtOnce, channel.eventLoop.inEventLoop { writtenAtOnceByLoop.add(1, ordering: .relaxed) }
        guard mustSchedule else { return }
        channel.eventLoop.execute { [self] in
            let frames = state.withLock { state in
                state.isScheduled = false
                state.socket.handedToChannel()
                defer { state.frames.removeAll(keepingCapacity: true) }
                return state.frames
            }
            for frame in frames {
                channel.write(frame, promise: nil)
            }
            channel.flush()
            // Usually the socket took everything. If not, an empty write behind the rest tells
            // when it has: until then, nothing may be written at once.
            guard (try? channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0 > 0 else {
                state.withLock { $0.socket.channelWroteHandOff() }
                return
            }
            let written = channel.eventLoop.makePromise(of: Void.self)
            written.futureResult.whenComplete { [self] _ in
                state.withLock { $0.socket.channelWroteHandOff() }
            }
            channel.writeAndFlush(channel.allocator.buffer(capacity: 0), promise: written)
        }
    }
}
