import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import SharedStateWire
import SyncEngine

/// Serves syncd's metrics over HTTP for a Prometheus scraper: `GET /metrics` in the text
/// exposition format, 404 for anything else. Off unless `syncd --metrics-address` names an
/// address; it shares syncd's event loops and reads nothing but the metrics.
package final class MetricsHTTPServer: Service {
    private let host: String
    private let port: Int
    private let text: @Sendable () -> String
    private let logger: Logger

    /// - Parameter address: `HOST:PORT`; port 0 takes a free one (logged as "metrics listening").
    /// - Throws: `DaemonStartError` when the address is not `HOST:PORT`.
    package init(address: String, text: @escaping @Sendable () -> String, logger: Logger) throws {
        guard let parsed = HostAndPort(parsing: address) else {
            throw DaemonStartError("--metrics-address must be HOST:PORT, like 127.0.0.1:9464, not \"\(address)\"")
        }
        self.host = parsed.host
        self.port = parsed.port
        self.text = text
        self.logger = logger
    }

    package func run() async throws {
        let text = self.text
        let channel: any Channel
        do {
            channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.pipeline.configureHTTPServerPipeline().flatMap {
                        channel.pipeline.addHandler(MetricsHTTPHandler(text: text))
                    }
                }
                .bind(host: host, port: port)
                .get()
        } catch {
            throw DaemonStartError("cannot serve metrics on \(host):\(port): \(error)")
        }
        logger.notice("metrics listening", metadata: ["address": "\(channel.localAddress.map { "\($0)" } ?? "?")"])
        try? await gracefulShutdown()
        try await channel.close()
    }
}

/// Answers one HTTP request at a time on one connection.
private final class MetricsHTTPHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let text: @Sendable () -> String

    init(text: @escaping @Sendable () -> String) {
        self.text = text
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let request) = unwrapInboundIn(data) else { return }
        let isMetrics = request.method == .GET && (request.uri == "/metrics" || request.uri.hasPrefix("/metrics?"))
        let body = isMetrics ? text() : "not found: syncd serves /metrics\n"
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: isMetrics ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain; charset=utf-8")
        headers.add(name: "Content-Length", value: "\(body.utf8.count)")
        let head = HTTPResponseHead(version: request.version, status: isMetrics ? .ok : .notFound, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body)))), promise: nil)
        let (keepsAlive, channel) = (request.isKeepAlive, context.channel)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            if !keepsAlive { channel.close(promise: nil) }
        }
    }
}
