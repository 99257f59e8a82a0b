import NIOCore

/// The client's one pipeline handler: cuts what it reads from syncd into frames, decodes each (a
/// watch event and the answer to a put or a delete by hand, see ``WatchEventFrame`` and
/// ``WriteAnswerFrame``; anything else with SwiftProtobuf) and hands it to the router; ends the
/// router when the connection closes.
///
/// It cuts the frames itself, in one loop over each read, as syncd's connection handler does:
/// NIO's `ByteToMessageHandler` in front of it looked its generic decoder's type up at run time on
/// every read and passed each frame down the pipeline in an `NIOAny` of its own, on the path of
/// every event a feature process receives.
final class RoutingHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let router: ResponseRouter
    private let socketPath: String
    private var frames: FrameDecoder
    /// Set once a frame could not be read: the stream cannot be followed any more.
    private var hasFailed = false

    init(router: ResponseRouter, socketPath: String, maxFrameBytes: Int = WireProtocol.maxServerFrameBytes) {
        self.router = router
        self.socketPath = socketPath
        self.frames = FrameDecoder(maxFrameBytes: maxFrameBytes)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !hasFailed else { return }
        frames.receive(unwrapInboundIn(data))
        do {
            while !hasFailed, let frame = try frames.next() { route(frame, context: context) }
        } catch {
            fail(error, context: context)
        }
    }

    private func route(_ payload: ByteBuffer, context: ChannelHandlerContext) {
        if let event = WatchEventFrame(frame: payload) {
            router.route(event)
            return
        }
        if let answer = WriteAnswerFrame(frame: payload) {
            router.route(answer.response)
            return
        }
        do {
            router.route(try Frame.decode(Sharedstate_V1_ServerFrame.self, from: payload))
        } catch {
            fail(error, context: context)
        }
    }

    private func fail(_ error: SharedStateError, context: ChannelHandlerContext) {
        hasFailed = true
        router.end(with: error)
        context.close(promise: nil)
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
