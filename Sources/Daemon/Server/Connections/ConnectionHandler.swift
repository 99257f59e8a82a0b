import Logging
import NIOCore
import SharedStateWire
import SyncEngine

/// Serves one client connection on its event loop: admits it, cuts the bytes it reads into frames
/// (``FrameDecoder``) and hands each to its ``ClientSession``, and closes it on a protocol error,
/// when the client leaves, or when syncd shuts down.
///
/// It cuts the frames itself, in one loop over each read, rather than behind NIO's
/// `ByteToMessageHandler`: that handler is generic over its decoder in another module, so each read
/// looked up its type's metadata at run time, and each frame went through a pipeline hop and an
/// `NIOAny` of its own (D23).
///
/// Requests are handled where they are read, with no hop to another thread: reads are answered
/// and flushed once per read from the socket, and the writes of one read join those of the other
/// connections the loop reads in the same turn, committed as one group (``TurnWrites``). A
/// request that has to wait (a replay, a backup, the history) runs as a task; reading pauses
/// until it is answered, so every connection's requests are handled in the order sent.
///
/// What the connection is doing is a value, ``ConnectionStateMachine``: the handler hands it each
/// event and does what it answers. The connection's ``ConnectionWriter`` tells it what happened
/// on the outbound side as ``ConnectionWriter/Event``s through the pipeline.
package final class ConnectionHandler: ChannelInboundHandler {
    package typealias InboundIn = ByteBuffer

    private var frames: FrameDecoder
    private let environment: ClientSession.Environment
    /// The writes this connection's event loop reads in one turn, which its own join.
    private let turnWrites: TurnWrites
    private let requests: RequestTasks
    private let registry: ConnectionRegistry
    private let limits: Limits
    /// The connected socket's descriptor, which the writer writes to directly when it may; nil
    /// when the channel is not a socket syncd accepted (a test's).
    private let descriptor: Int32?
    private var state = ConnectionStateMachine()
    private var context: ChannelHandlerContext?
    private var writer: ConnectionWriter?
    private var session: ClientSession?
    private var handshakeTimeout: Scheduled<Void>?
    private var drainTimeout: Scheduled<Void>?

    /// How long a draining connection may wait for its writes' answers before it is closed anyway.
    static let drainLimit = TimeAmount.seconds(5)

    /// A handler for a new connection; `limits` are those in force when it was accepted,
    /// `descriptor` its socket's.
    init(
        environment: ClientSession.Environment, turnWrites: TurnWrites, registry: ConnectionRegistry, requests: RequestTasks,
        limits: Limits, descriptor: Int32? = nil
    ) {
        self.descriptor = descriptor
        self.environment = environment
        self.turnWrites = turnWrites
        self.registry = registry
        self.requests = requests
        self.limits = limits
        self.frames = FrameDecoder(maxFrameBytes: limits.maxRequestFrameBytes)
    }

    private var logger: Logger { environment.logger }

    package func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        writer = ConnectionWriter(channel: context.channel, descriptor: descriptor, watermarks: limits.outboundWatermarks)
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    package func channelActive(context: ChannelHandlerContext) {
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        PeerCredentials.read(from: context.channel).whenSuccess { credentials in
            handler.value.admit(credentials)
        }
        // A client that sends no Hello (or trickles it) does not keep its connection.
        let seconds = limits.handshakeTimeoutSeconds
        handshakeTimeout = context.eventLoop.scheduleTask(in: .seconds(Int64(seconds))) {
            let handler = handler.value
            guard handler.session?.record.hasGreeted != true else { return }
            handler.fail(SharedStateError(.protocolViolation, "no Hello within \(seconds) s of connecting"))
        }
        context.fireChannelActive()
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        frames.receive(unwrapInboundIn(data))
        do {
            while state.phase != .closed, let frame = try frames.next() {
                if case .handle(let frame) = state.frameRead(frame) { handle(frame) }
            }
        } catch {
            // A frame over the limit: the stream cannot be followed any more.
            return fail(error)
        }
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        if state.submitsWrites { session?.submitQueuedWrites(joining: turnWrites) }
        writer?.flush()
        updateReading()
        context.fireChannelReadComplete()
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let event = event as? ConnectionWriter.Event else {
            return context.fireUserInboundEventTriggered(event)
        }
        switch event {
        case .answersWentOut:
            updateReading()
        case .pacedOutputChanged:
            writabilityChanged()
        case .allAnswered:
            // Only a draining connection asks for it.
            context.close(promise: nil)
        }
    }

    package func channelWritabilityChanged(context: ChannelHandlerContext) {
        writabilityChanged()
        context.fireChannelWritabilityChanged()
    }

    /// The channel's writability, or what the writer sends a piece at a time, changed.
    private func writabilityChanged() {
        guard let context else { return }
        if let writer, writer.writabilityChanged(isWritable: context.channel.isWritable) {
            let engine = environment.engine
            let resync = engine.resync(writer)
            if resync.count > 0 { writer.countResync() }
            for catchUp in resync.large {
                // Ends with the connection: its watches are removed, and nothing is sent.
                _ = requests.run { try? await engine.catchUp(catchUp) }
            }
        }
        updateReading()
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? SharedStateError {
            fail(error)
        } else {
            logger.debug("connection failed", metadata: ["session": "\(session?.record.sessionID ?? 0)", "error": "\(error)"])
            context.close(promise: nil)
        }
    }

    package func channelInactive(context: ChannelHandlerContext) {
        _ = state.close()
        handshakeTimeout?.cancel()
        drainTimeout?.cancel()
        if let session {
            session.end()
            registry.remove(session.record.sessionID)
            logger.debug("client left", metadata: ["session": "\(session.record.sessionID)", "name": "\(session.record.clientName)"])
        }
        context.fireChannelInactive()
    }

    // MARK: Steps

    private func admit(_ credentials: PeerCredentials?) {
        guard state.phase == .admitting, let context, let writer else { return }
        let record = ClientRecord(sessionID: registry.nextSessionID(), credentials: credentials, writer: writer)
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let refusal = registry.admit(
            record,
            limits: limits,
            drain: { handler.eventLoop.execute { handler.value.drain() } },
            evict: { error in handler.eventLoop.execute { handler.value.fail(error, isNotable: false) } }
        )
        if let refusal {
            logger.warning("refused a connection", metadata: ["pid": "\(credentials?.pid ?? 0)", "reason": "\(refusal)"])
            _ = state.close()
            writer.sendLastAndClose(Self.fatalFrame(refusal))
            return
        }
        let (registry, limits) = (self.registry, self.limits)
        session = ClientSession(record: record, environment: environment) {
            registry.greet(record.sessionID, limits: limits)
        }
        _ = state.admitted()
        updateReading()
        handleWaiting()
    }

    private func handle(_ frame: ByteBuffer) {
        guard let session else { return }
        switch session.receive(frame) {
        case .next:
            break
        case .close(let error):
            fail(error)
        case .suspend(let suspension):
            suspend(suspension)
        }
    }

    /// Handles the frames that waited, until they are done or one suspends again.
    private func handleWaiting() {
        while let frame = state.nextWaitingFrame() {
            handle(frame)
        }
        if state.submitsWrites { session?.submitQueuedWrites() }
        writer?.flush()
    }

    private func suspend(_ suspension: ClientSession.Suspension) {
        guard let context, let session else { return }
        session.submitQueuedWrites()
        state.suspended()
        updateReading()
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let started = requests.run {
            let result = await suspension.work()
            handler.eventLoop.execute { handler.value.resume(after: suspension, with: result) }
        }
        if !started {
            resume(after: suspension, with: .failure(SharedStateError(.unavailable, "syncd is shutting down")))
        }
    }

    private func resume(
        after suspension: ClientSession.Suspension,
        with result: Result<Sharedstate_V1_Response.OneOf_Result?, SharedStateError>
    ) {
        guard let session else { return }
        let next = state.resumed()
        guard next != .ignore else { return }
        session.finish(suspension, with: result)
        writer?.flush()
        guard next == .answerAndServe else { return }
        updateReading()
        handleWaiting()
    }

    /// Stops taking requests and closes once the writes already taken are answered, or after
    /// ``drainLimit``.
    private func drain() {
        guard let context, let writer, state.startDraining() else { return }
        setReading(false)
        session?.submitQueuedWrites()
        writer.flush()
        let channel = context.channel
        drainTimeout = context.eventLoop.scheduleTask(in: Self.drainLimit) { channel.close(promise: nil) }
        if !writer.notifyWhenAllAnswered() { channel.close(promise: nil) }
    }

    /// Sends `error` as the last frame and closes; logs it at info level when `isNotable` (a
    /// connection pushed out by a flood of others is logged at debug level only, so the flood does
    /// not flood the journal too).
    private func fail(_ error: SharedStateError, isNotable: Bool = true) {
        guard let writer, state.phase != .closed else { return }
        session?.submitQueuedWrites()
        _ = state.close()
        setReading(false)
        logger.log(
            level: isNotable ? .info : .debug,
            "closing connection after a protocol error",
            metadata: ["session": "\(session?.record.sessionID ?? 0)", "name": "\(session?.record.clientName ?? "")", "error": "\(error)"]
        )
        writer.sendLastAndClose(Self.fatalFrame(error))
    }

    /// Reads the connection while it is serving and its outbound side keeps up: not while the
    /// answers it has not taken are over the channel's high watermark, nor while it has
    /// `maxWritesInFlightPerConnection` writes waiting for their commit. Its requests then wait
    /// in the kernel's socket buffer, and the client's writes block, instead of syncd's memory
    /// growing.
    private func updateReading() {
        guard let writer else { return }
        let tooManyInFlight = writer.answersOwed >= limits.maxWritesInFlightPerConnection
        // Answers going out re-evaluate this only while they are what reading waits for.
        if writer.isWaitingForAnswers != tooManyInFlight { writer.isWaitingForAnswers = tooManyInFlight }
        if let isReading = state.updateReading(isWritable: writer.isWritable, hasTooManyWritesInFlight: tooManyInFlight) {
            setReading(isReading)
        }
    }

    private func setReading(_ isReading: Bool) {
        // Turning it back on also asks for the next read.
        context?.channel.setOption(ChannelOptions.autoRead, value: isReading).whenFailure { _ in }
    }

    private static func fatalFrame(_ error: SharedStateError) -> ByteBuffer {
        Frame.encode(Sharedstate_V1_ServerFrame.with { $0.fatal = error.wireValue })
    }
}
