import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// The inspector's HTTP side: the page, its JSON endpoints and its live stream, on a loopback
/// address, behind ``InspectorGate``. NIO's HTTP/1 server, as syncd's metrics endpoint uses:
/// a page, a handful of JSON answers and one Server-Sent Events stream need no framework, and
/// syncctl already links NIO.
struct InspectorHTTPServer: Sendable {
    let api: InspectorAPI
    let feed: InspectorFeed
    let page: [UInt8]

    /// Binds `address`; returns the listening channel and the gate for the port it got (which
    /// `Host` headers name it), holding `token`. A connection that comes before the gate is made
    /// is closed.
    func bind(_ address: InspectorAddress, token: String) async throws -> (channel: any Channel, gate: InspectorGate) {
        let gateBox = NIOLockedValueBox<InspectorGate?>(nil)
        let server = self
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline(withErrorHandling: true).flatMapThrowing {
                    guard let gate = gateBox.withLockedValue({ $0 }) else { throw ChannelError.ioOnClosedChannel }
                    try channel.pipeline.syncOperations.addHandler(InspectorHTTPHandler(server: server, gate: gate))
                }
            }
            .bind(host: address.host, port: address.port)
            .get()
        let port = channel.localAddress?.port ?? address.port
        let gate = InspectorGate(token: token, acceptedHosts: InspectorAddress.acceptedHosts(port: port, host: address.host))
        gateBox.withLockedValue { $0 = gate }
        return (channel, gate)
    }

    /// The headers every answer carries: nothing cached, no referrer (the URL holds the token),
    /// no guessing of types, no framing by another page, and for the page nothing loaded from
    /// anywhere else.
    static func headers(contentType: String, isPage: Bool = false) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(name: "Referrer-Policy", value: "no-referrer")
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: "X-Frame-Options", value: "DENY")
        if isPage {
            headers.add(
                name: "Content-Security-Policy",
                value:
                    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'"
            )
        }
        return headers
    }
}

/// One HTTP connection: each request checked by the gate, then answered; `/api/stream` keeps
/// the connection as a Server-Sent Events stream.
private final class InspectorHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let server: InspectorHTTPServer
    private let gate: InspectorGate
    private var head: HTTPRequestHead?
    private var stream: EventStream?

    init(server: InspectorHTTPServer, gate: InspectorGate) {
        self.server = server
        self.gate = gate
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body: break
        case .end:
            guard let head else { return }
            self.head = nil
            respond(to: head, context: context)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let stream { server.feed.unsubscribe(stream) }
        stream = nil
        context.fireChannelInactive()
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let components = URLComponents(string: "http://inspector" + head.uri)
        let path = components?.path ?? head.uri
        var query: [String: String] = [:]
        for item in components?.queryItems ?? [] { query[item.name] = item.value ?? "" }
        if let refusal = gate.refusal(query: query, header: { head.headers.first(name: $0) }) {
            return send(status: .forbidden, contentType: "text/plain; charset=utf-8", body: Array((refusal + "\n").utf8), head, context)
        }
        guard head.method == .GET else {
            return send(status: .methodNotAllowed, contentType: "text/plain; charset=utf-8", body: Array("only GET\n".utf8), head, context)
        }
        switch path {
        case "/", "/index.html":
            send(status: .ok, contentType: "text/html; charset=utf-8", body: server.page, head, context, isPage: true)
        case "/api/stream":
            startStream(head, context)
        case _ where path.hasPrefix("/api/"):
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let api = server.api
            Task {
                let answer = await api.answer(path: path, query: query)
                bound.eventLoop.execute {
                    let (handler, context) = bound.value
                    handler.send(
                        status: HTTPResponseStatus(statusCode: answer.status), contentType: "application/json; charset=utf-8",
                        body: Array(answer.json.utf8), head, context)
                }
            }
        default:
            send(status: .notFound, contentType: "text/plain; charset=utf-8", body: Array("not found: \(path)\n".utf8), head, context)
        }
    }

    private func send(
        status: HTTPResponseStatus, contentType: String, body: [UInt8], _ request: HTTPRequestHead, _ context: ChannelHandlerContext,
        isPage: Bool = false
    ) {
        var headers = InspectorHTTPServer.headers(contentType: contentType, isPage: isPage)
        headers.add(name: "Content-Length", value: "\(body.count)")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        let (keepsAlive, channel) = (request.isKeepAlive, context.channel)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            if !keepsAlive { channel.close(promise: nil) }
        }
    }

    private func startStream(_ request: HTTPRequestHead, _ context: ChannelHandlerContext) {
        let headers = InspectorHTTPServer.headers(contentType: "text/event-stream; charset=utf-8")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: .ok, headers: headers))), promise: nil)
        // A comment, so the browser sees the stream open at once.
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: ": live\n\n")))), promise: nil)
        let stream = EventStream(channel: context.channel)
        self.stream = stream
        server.feed.subscribe(stream)
    }
}

/// An open `/api/stream`: events written as they come while the browser keeps up; while it
/// does not (the socket's buffer full), they are dropped and a `resync` event tells the page
/// to read the state again once it does.
private final class EventStream: InspectorStreamSubscriber {
    private let channel: any Channel
    private let missedSome = NIOLockedValueBox(false)

    init(channel: any Channel) {
        self.channel = channel
    }

    func send(_ event: ByteBuffer) {
        guard channel.isWritable else {
            missedSome.withLockedValue { $0 = true }
            return
        }
        if missedSome.withLockedValue({ missed in
            defer { missed = false }
            return missed
        }) {
            channel.write(HTTPServerResponsePart.body(.byteBuffer(Self.resync)), promise: nil)
        }
        channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(event)), promise: nil)
    }

    private static let resync = ByteBuffer(string: InspectorFeed.event("resync", "{}"))
}
