import NIOCore

/// Watches a connection's writability: when its outbound queue passes the high watermark the
/// connection is backlogged and gets no more changes; when it drains, the engine resynchronises
/// its watches with a fresh snapshot.
final class BacklogHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let writer: ConnectionWriter
    private let caughtUp: @Sendable () -> Void

    init(writer: ConnectionWriter, caughtUp: @escaping @Sendable () -> Void) {
        self.writer = writer
        self.caughtUp = caughtUp
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if writer.writabilityChanged(isWritable: context.channel.isWritable) {
            caughtUp()
        }
        context.fireChannelWritabilityChanged()
    }
}
