import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// One socket connection to syncd, after the handshake: sends requests and hands back what
/// syncd answers. ``SharedStateClient`` replaces it with a new one when it ends.
final class Connection: Sendable {
    let channel: any Channel
    let router: ResponseRouter
    let welcome: Sharedstate_V1_Welcome
    private let outbound: OutboundQueue
    /// The channel's loop, preferred while a call waits: the answer resumes it there.
    private let resumption: EventLoopTaskExecutor

    /// Requests written at once by the thread that reads this connection (see ``OutboundQueue``).
    var requestsWrittenByReadingThread: Int { outbound.framesWrittenAtOnceByLoop }
    /// Requests sent and not yet answered.
    private let awaited = Atomic<Int>(0)

    private init(
        channel: any Channel, descriptor: CInt, router: ResponseRouter, welcome: Sharedstate_V1_Welcome, executor: EventLoopTaskExecutor
    ) {
        self.channel = channel
        self.router = router
        self.welcome = welcome
        self.outbound = OutboundQueue(channel: channel, descriptor: descriptor)
        self.resumption = executor
    }

    /// Connects to the socket in `configuration` on `executor`'s loop and completes the handshake.
    ///
    /// - Throws: `unavailable` naming the socket when syncd cannot be reached, `protocolViolation`
    ///   when it refuses the handshake.
    static func open(_ configuration: SharedStateClient.Configuration, on executor: EventLoopTaskExecutor) async throws(SharedStateError)
        -> Connection
    {
        let router = ResponseRouter()
        let path = configuration.socketPath
        let channel: any Channel
        let socket: CInt
        do {
            socket = try UnixSocket.connectedSocket(to: path)
        } catch {
            let hint =
                error.isAboutThePath ? "" : " Is syncd running? Start it with `syncd`, or point --socket / SYNCD_SOCKET at its socket."
            throw SharedStateError(.unavailable, "cannot reach syncd at \(path): \(error).\(hint)")
        }
        do {
            channel = try await ClientBootstrap(group: executor.loop)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(RoutingHandler(router: router, socketPath: path))
                    }
                }
                .withConnectedSocket(socket)
                .get()
        } catch {
            throw SharedStateError(
                .unavailable,
                "cannot reach syncd at \(path): \(describe(error)). Is syncd running? Start it with `syncd`, or point --socket / SYNCD_SOCKET at its socket."
            )
        }
        let hello = Sharedstate_V1_ClientFrame.with {
            $0.hello = .with {
                $0.protocolVersion = WireProtocol.version
                $0.clientName = configuration.clientName
            }
        }
        do {
            let welcome = try await router.awaitWelcome {
                channel.writeAndFlush(Frame.encode(hello), promise: nil)
            }
            guard welcome.protocolVersion == WireProtocol.version else {
                throw SharedStateError(
                    .protocolViolation,
                    "syncd at \(path) speaks protocol version \(welcome.protocolVersion); this client speaks \(WireProtocol.version)"
                )
            }
            // The duplicate the caller's thread writes to (see OutboundQueue); -1 if none can be had.
            return Connection(channel: channel, descriptor: dup(socket), router: router, welcome: welcome, executor: executor)
        } catch {
            channel.close(promise: nil)
            throw error as? SharedStateError ?? SharedStateError(.unavailable, "handshake with syncd at \(path) failed: \(error)")
        }
    }

    /// Sends a request under a fresh request id and waits for its result; a response carrying an
    /// error is thrown.
    nonisolated(nonsending) func call(_ operation: Sharedstate_V1_Request.OneOf_Operation) async throws(SharedStateError)
        -> Sharedstate_V1_Response.OneOf_Result
    {
        try await call { id in Frame.encode(Self.requestFrame(id: id, operation)) }
    }

    /// Sends the request `frame` makes under a fresh request id and waits for its result, as
    /// ``call(_:)`` does: for a frame written by hand (``PutRequestFrame``).
    nonisolated(nonsending) func call(framing frame: (UInt64) -> ByteBuffer) async throws(SharedStateError)
        -> Sharedstate_V1_Response.OneOf_Result
    {
        let id = router.makeRequestID()
        let frame = frame(id)
        let outbound = self.outbound
        // A lone request is written at once by this thread; requests that overlap (pipelined, or
        // from several tasks) are gathered into one write by the event loop, which costs syncd
        // fewer reads than a write each.
        let isAlone = awaited.add(1, ordering: .relaxed).newValue == 1
        defer { awaited.subtract(1, ordering: .relaxed) }
        let response: Sharedstate_V1_Response
        do {
            // Resumed on the loop that reads the answer, then back on the caller's actor: under
            // MainEventLoop the same thread, no other woken (Swift 6.3 would resume the task on
            // the global executor's threads first).
            // A task that prefers the loop already (SharedStateClient.executor) skips pushing the
            // same preference again, a status record added and removed under the task's lock (D49).
            if withUnsafeCurrentTask(body: { $0?.unownedTaskExecutor == resumption.asUnownedTaskExecutor() }) {
                response = try await router.call(id: id) {
                    outbound.send(frame, mayWriteAtOnce: isAlone)
                }
            } else {
                response = try await withTaskExecutorPreference(resumption) {
                    try await router.call(id: id) {
                        outbound.send(frame, mayWriteAtOnce: isAlone)
                    }
                }
            }
        } catch {
            throw error as? SharedStateError ?? SharedStateError(.unavailable, "\(error)")
        }
        switch response.result {
        case .error(let error): throw SharedStateError(wireValue: error)
        case .some(let result): return result
        case nil: throw SharedStateError(.protocolViolation, "syncd sent an empty response to request \(id)")
        }
    }

    /// Starts a watch on this connection and returns its id here. `onStart` gets the revision it
    /// starts after, batches go to `onBatch`; if the watch cannot start, or the connection ends,
    /// `onEnd` gets the reason. With `previousValues`, each change carries the key's entry before
    /// it.
    func startWatch(
        prefixes: [String],
        start: WatchStart,
        previousValues: Bool,
        onStart: @escaping @Sendable (UInt64) -> Void,
        onBatch: @escaping @Sendable (WatchBatch) -> Void,
        onEnd: @escaping @Sendable (SharedStateError) -> Void
    ) -> UInt64 {
        let id = router.makeRequestID()
        guard router.registerWatch(id: id, previousValues: previousValues, onStart: onStart, onBatch: onBatch, onEnd: onEnd) else {
            return id
        }
        let request = Self.requestFrame(
            id: id,
            .watch(
                .with {
                    $0.prefixes = prefixes
                    $0.previousValues = previousValues
                    switch start {
                    case .snapshot: $0.snapshot = true
                    case .now: break
                    case .after(let revision): $0.afterRevision = revision
                    }
                }
            )
        )
        outbound.send(Frame.encode(request), mayWriteAtOnce: false)
        return id
    }

    /// Ends a watch started here.
    func cancelWatch(id: UInt64) {
        let cancelID = router.makeRequestID()
        guard router.removeWatch(id: id, cancelRequestID: cancelID) else { return }
        let frame = Self.requestFrame(id: cancelID, .cancelWatch(.with { $0.watchID = id }))
        outbound.send(Frame.encode(frame), mayWriteAtOnce: false)
    }

    /// Closes the socket.
    func close() {
        channel.close(promise: nil)
    }

    private static func requestFrame(id: UInt64, _ operation: Sharedstate_V1_Request.OneOf_Operation) -> Sharedstate_V1_ClientFrame {
        .with {
            $0.request = .with {
                $0.id = id
                $0.operation = operation
            }
        }
    }

    private static func describe(_ error: any Error) -> String {
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)) }
        return "\(error)"
    }
}
