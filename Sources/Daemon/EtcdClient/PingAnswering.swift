import NIOCore

/// Answers the HTTP/2 PINGs an etcd member sends, before swift-nio-http2 counts them.
///
/// etcd's gRPC server (grpc-go) estimates the connection's bandwidth-delay product by sending a
/// PING for about every request it receives. swift-nio-http2 takes more than 200 PING or
/// SETTINGS frames in 30 seconds for a denial-of-service attack and closes the connection, and
/// grpc-swift-nio-transport does not let that limit be set: against etcd, a connection died after
/// about 200 calls, whatever their pace. This handler sits between the socket and the HTTP/2
/// handler, answers each PING that is not itself an answer, as HTTP/2 requires, and passes every
/// other frame on unchanged.
final class PingAnswering: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private static let frameHeaderBytes = 9
    private static let pingType: UInt8 = 0x6
    private static let ackFlag: UInt8 = 0x1

    /// Bytes of a frame not yet whole.
    private var pending: ByteBuffer?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        if var pending = self.pending.take() {
            pending.writeBuffer(&incoming)
            incoming = pending
        }
        var passed = context.channel.allocator.buffer(capacity: incoming.readableBytes)
        var answered = false
        while incoming.readableBytes >= Self.frameHeaderBytes {
            let start = incoming.readerIndex
            guard let high = incoming.getInteger(at: start, as: UInt8.self),
                let low = incoming.getInteger(at: start + 1, as: UInt16.self),
                let type = incoming.getInteger(at: start + 3, as: UInt8.self),
                let flags = incoming.getInteger(at: start + 4, as: UInt8.self)
            else { break }
            let length = Int(high) << 16 | Int(low)
            guard incoming.readableBytes >= Self.frameHeaderBytes + length,
                var frame = incoming.readSlice(length: Self.frameHeaderBytes + length)
            else { break }
            if type == Self.pingType, flags & Self.ackFlag == 0, length == 8 {
                var answer = frame
                answer.setInteger(flags | Self.ackFlag, at: answer.readerIndex + 4)
                context.write(wrapOutboundOut(answer), promise: nil)
                answered = true
            } else {
                passed.writeBuffer(&frame)
            }
        }
        if incoming.readableBytes > 0 { pending = incoming }
        if answered { context.flush() }
        if passed.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(passed)) }
    }
}
