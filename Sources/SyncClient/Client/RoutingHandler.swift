import NIOCore

/// The client's last pipeline handler: decodes each frame from syncd (a watch event by hand, see
/// ``WatchEventFrame``; anything else with SwiftProtobuf) and hands it to the router; ends the
/// router when the connection closes.
final class RoutingHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let router: ResponseRouter
    private let socketPath: String

    init(router: ResponseRouter, socketPath: String) {
        self.router = router
        self.socketPath = socketPath
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let payload = unwrapInboundIn(data)
        if let event = WatchEventFrame(frame: payload) {
            router.route(event)
            return
        }
        do {
            router.route(try Frame.decode(Sharedstate_V1_ServerFrame.self, from: payload))
        } catch {
            router.end(with: error)
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        router.end(with: SharedStateError(.unavailable, "the connection to syncd at \(socketPath) closed"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let reason =
            (error as? SharedStateError)
            ?? SharedStateError(.unavailable, "the connection to syncd at \(socketPath) failed: \(error)")
        router.end(with: reason)
        context.close(promise: nil)
    }
}
