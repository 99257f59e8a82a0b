import NIOCore
import Synchronization

/// The outbound side of one client connection: frames encoded elsewhere are written straight to
/// the channel on its event loop and flushed once per call.
///
/// The per-event path (engine → watchers) bypasses NIOAsyncChannel's writer on purpose: measured
/// on this kind of machine, the async writer costs about 3× per frame (see FACTS.md), and fan-out
/// is the hot path. Inbound requests still arrive through NIOAsyncChannel.
///
/// Its queue is bounded by the channel's write-buffer watermarks: above the high mark the
/// connection counts as backlogged (``isBacklogged``) until it drains below the low mark.
final class ConnectionWriter: WatchSubscriber {
    private let channel: any Channel
    private let backlogged = Atomic<Bool>(false)
    private let resyncCount = Atomic<UInt64>(0)

    init(channel: any Channel) {
        self.channel = channel
    }

    var allocator: ByteBufferAllocator { channel.allocator }

    var isBacklogged: Bool { backlogged.load(ordering: .relaxed) }

    /// How often this connection fell behind and was resynchronised.
    var resyncs: UInt64 { resyncCount.load(ordering: .relaxed) }

    /// Counts one resynchronisation.
    func countResync() {
        resyncCount.wrappingAdd(1, ordering: .relaxed)
    }

    /// The bytes queued in the channel and not yet written to the socket.
    var queuedBytes: Int {
        get async { (try? await channel.getOption(.bufferedWritableBytes)) ?? 0 }
    }

    /// Records the channel's writability; returns true when the connection just caught up.
    func writabilityChanged(isWritable: Bool) -> Bool {
        backlogged.exchange(!isWritable, ordering: .relaxed) && isWritable
    }

    func send(_ frames: [ByteBuffer]) {
        let channel = self.channel
        channel.eventLoop.execute {
            for frame in frames {
                channel.write(frame, promise: nil)
            }
            channel.flush()
        }
    }

    func send(_ frame: ByteBuffer) {
        channel.writeAndFlush(frame, promise: nil)
    }

    /// Writes a last frame and waits until it has left, so closing afterwards cannot cut it off.
    func sendLast(_ frame: ByteBuffer) async {
        try? await channel.writeAndFlush(frame)
    }
}
