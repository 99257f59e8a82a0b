import NIOCore

/// The outbound side of one client connection: frames encoded elsewhere are written straight to
/// the channel on its event loop and flushed once per call.
///
/// The per-event path (engine → watchers) bypasses NIOAsyncChannel's writer on purpose: measured
/// on this kind of machine, the async writer costs about 3× per frame (see FACTS.md), and fan-out
/// is the hot path. Inbound requests still arrive through NIOAsyncChannel.
final class ConnectionWriter: WatchSubscriber {
    private let channel: any Channel

    init(channel: any Channel) {
        self.channel = channel
    }

    var allocator: ByteBufferAllocator { channel.allocator }

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
