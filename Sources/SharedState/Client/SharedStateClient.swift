import Foundation
import NIOCore
import NIOPosix

/// A connection to syncd: read and write keys, run transactions, and watch changes.
///
/// ```swift
/// let client = try await SharedStateClient.connect()
/// try await client.put("door/state", json: #""open""#)
/// for try await batch in client.watch(prefixes: ["door/"]) {
///     print(batch.revision, batch.changes)
/// }
/// ```
///
/// Every method may be called from any task. Requests sent while others are in flight are
/// pipelined on the one connection. When the connection ends, waiting calls and watches fail with
/// `unavailable`, as do later calls.
public final class SharedStateClient: Sendable {
    /// How to reach syncd.
    public struct Configuration: Sendable {
        /// The Unix socket syncd listens on.
        public var socketPath: String
        /// A name for `syncctl clients` and syncd's logs.
        public var clientName: String
        /// The limits checked before sending, so mistakes fail without a round trip.
        public var limits: Limits = .default

        /// A configuration for `socketPath`, or the default socket (see
        /// ``DefaultLocations/clientSocketPath(environment:)``).
        public init(socketPath: String? = nil, clientName: String = ProcessInfo.processInfo.processName) {
            self.socketPath = socketPath ?? DefaultLocations.clientSocketPath(environment: ProcessInfo.processInfo.environment)
            self.clientName = clientName
        }
    }

    /// The socket this client is connected to.
    public let socketPath: String
    /// This connection's session id, as syncd assigned it.
    public let sessionID: UInt64
    /// syncd's revision when the connection was made.
    public let revisionAtConnect: UInt64

    private let channel: any Channel
    private let router: ResponseRouter
    private let limits: Limits

    private init(channel: any Channel, router: ResponseRouter, configuration: Configuration, welcome: Sharedstate_V1_Welcome) {
        self.channel = channel
        self.router = router
        self.limits = configuration.limits
        self.socketPath = configuration.socketPath
        self.sessionID = welcome.sessionID
        self.revisionAtConnect = welcome.revision
    }

    /// Connects to syncd and completes the handshake.
    ///
    /// - Throws: ``SharedStateError`` `unavailable` naming the socket when syncd cannot be reached,
    ///   `protocolViolation` when it refuses the handshake.
    public static func connect(_ configuration: Configuration = Configuration()) async throws(SharedStateError) -> SharedStateClient {
        let router = ResponseRouter()
        let path = configuration.socketPath
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandlers(
                            ByteToMessageHandler(FrameDecoder(maxFrameBytes: WireProtocol.maxServerFrameBytes)),
                            RoutingHandler(router: router, socketPath: path)
                        )
                    }
                }
                .connect(unixDomainSocketPath: path)
                .get()
        } catch {
            throw SharedStateError(
                .unavailable,
                "cannot reach syncd at \(path): \(Self.describeConnectError(error)). Is syncd running? Start it with `syncd`, or point --socket / SYNCD_SOCKET at its socket."
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
                channel.writeAndFlush(Frame.encode(hello, allocator: channel.allocator), promise: nil)
            }
            guard welcome.protocolVersion == WireProtocol.version else {
                throw SharedStateError(
                    .protocolViolation,
                    "syncd at \(path) speaks protocol version \(welcome.protocolVersion); this client speaks \(WireProtocol.version)"
                )
            }
            return SharedStateClient(channel: channel, router: router, configuration: configuration, welcome: welcome)
        } catch {
            channel.close(promise: nil)
            throw error as? SharedStateError ?? SharedStateError(.unavailable, "handshake with syncd at \(path) failed: \(error)")
        }
    }

    /// Returns once the connection has ended, by ``close()`` or because syncd went away.
    public func waitUntilClosed() async {
        try? await channel.closeFuture.get()
    }

    /// Closes the connection; waiting calls and watches end with `unavailable`.
    public func close() async {
        try? await channel.close()
    }

    deinit {
        channel.close(promise: nil)
    }

    // MARK: Keys

    /// The entry of `key`.
    ///
    /// - Throws: `notFound` when the key does not exist, `invalidArgument` for a malformed key.
    public func get(_ key: String) async throws(SharedStateError) -> Entry {
        try KeyRules.validateKey(key, limits: limits)
        let result = try await call(.get(.with { $0.key = key }))
        guard case .get(let get) = result else { throw unexpected(result) }
        return Entry(wireValue: get.entry)
    }

    /// Sets `key` to `value`, one JSON document.
    ///
    /// - Parameters:
    ///   - ifVersion: Write only if the key is at this version; 0 means "only if it does not
    ///     exist". Without it the write always happens.
    ///   - ephemeral: Bind the key to this connection: syncd deletes it, as an ordinary change,
    ///     when the connection closes or this process dies. Use it for presence.
    /// - Throws: `conflict` when `ifVersion` does not match, `invalidArgument` or `tooLarge` for a
    ///   bad key or value, `unavailable` when syncd is gone.
    @discardableResult
    public func put(
        _ key: String,
        value: Data,
        ifVersion: UInt64? = nil,
        ephemeral: Bool = false
    ) async throws(SharedStateError) -> PutResult {
        try KeyRules.validateKey(key, limits: limits)
        try ValueRules.validateValue(value, limits: limits)
        let result = try await call(
            .put(
                .with {
                    $0.key = key
                    $0.value = value
                    if let ifVersion { $0.ifVersion = ifVersion }
                    $0.ephemeral = ephemeral
                }
            )
        )
        guard case .put(let put) = result else { throw unexpected(result) }
        return PutResult(revision: put.revision, version: put.version)
    }

    /// Sets `key` to the JSON document in `json`.
    @discardableResult
    public func put(
        _ key: String,
        json: String,
        ifVersion: UInt64? = nil,
        ephemeral: Bool = false
    ) async throws(SharedStateError) -> PutResult {
        try await put(key, value: Data(json.utf8), ifVersion: ifVersion, ephemeral: ephemeral)
    }

    /// Removes `key` and returns the revision of the removal.
    ///
    /// - Throws: `notFound` when the key does not exist, `conflict` when `ifVersion` does not match.
    @discardableResult
    public func delete(_ key: String, ifVersion: UInt64? = nil) async throws(SharedStateError) -> UInt64 {
        try KeyRules.validateKey(key, limits: limits)
        let result = try await call(
            .delete(
                .with {
                    $0.key = key
                    if let ifVersion { $0.ifVersion = ifVersion }
                })
        )
        guard case .delete(let delete) = result else { throw unexpected(result) }
        return delete.revision
    }

    /// The entries whose keys start with `prefix`, in key order.
    ///
    /// - Parameter limit: At most this many entries; ``ListResult/isTruncated`` tells if more exist.
    public func list(prefix: String = "", limit: Int? = nil) async throws(SharedStateError) -> ListResult {
        try KeyRules.validatePrefix(prefix, limits: limits)
        if let limit, limit < 1 {
            throw SharedStateError(.invalidArgument, "list limit must be at least 1, not \(limit)")
        }
        let result = try await call(
            .list(
                .with {
                    $0.prefix = prefix
                    $0.limit = UInt32(clamping: limit ?? 0)
                })
        )
        guard case .list(let list) = result else { throw unexpected(result) }
        return ListResult(entries: list.entries.map(Entry.init(wireValue:)), revision: list.revision, isTruncated: list.truncated)
    }

    /// Applies a transaction atomically; see ``Transaction``.
    ///
    /// - Throws: `conflict` when an operation's own `ifVersion` fails (nothing is applied),
    ///   `invalidArgument` when a branch writes one key twice.
    public func transaction(_ transaction: Transaction) async throws(SharedStateError) -> TransactionResult {
        for compare in transaction.compares { try KeyRules.validateKey(compare.wireValue.key, limits: limits) }
        for operation in transaction.onSuccess + transaction.onFailure {
            try KeyRules.validateKey(operation.key, limits: limits)
            if let value = operation.value { try ValueRules.validateValue(value, limits: limits) }
        }
        let result = try await call(
            .transaction(
                .with {
                    $0.compares = transaction.compares.map(\.wireValue)
                    $0.onSuccess = transaction.onSuccess.map(\.wireValue)
                    $0.onFailure = transaction.onFailure.map(\.wireValue)
                })
        )
        guard case .transaction(let outcome) = result else { throw unexpected(result) }
        return TransactionResult(succeeded: outcome.succeeded, revision: outcome.revision)
    }

    /// A summary of the daemon.
    public func status() async throws(SharedStateError) -> ServerStatus {
        let result = try await call(.status(.init()))
        guard case .status(let status) = result else { throw unexpected(result) }
        return ServerStatus(
            revision: status.revision,
            keys: status.keys,
            clients: status.clients,
            watches: status.watches,
            compactedRevision: status.compactedRevision,
            databaseBytes: status.databaseBytes,
            uptimeSeconds: status.uptimeSeconds,
            serverVersion: status.serverVersion,
            databasePath: status.databasePath
        )
    }

    /// Removes the change log up to and including `revision`; watches can no longer resume from
    /// before it. Returns the compacted revision.
    ///
    /// - Throws: `invalidArgument` for a revision above the current one.
    @discardableResult
    public func compact(through revision: UInt64) async throws(SharedStateError) -> UInt64 {
        let result = try await call(.compact(.with { $0.revision = revision }))
        guard case .compact(let compact) = result else { throw unexpected(result) }
        return compact.compactedRevision
    }

    // MARK: Watches

    /// Watches the keys under `prefixes`.
    ///
    /// Without `fromRevision`, the first batch is a snapshot of the selected entries at some
    /// revision R, followed by every change after R. With it, every change after that revision
    /// is replayed from the change log, then live changes follow. Either way each revision's
    /// changes arrive in one batch, in revision order, with no gap and no duplicate.
    ///
    /// Stop consuming (or cancel the consuming task) to cancel the watch on the daemon. The
    /// stream ends with an error when the watch cannot start (`compacted`, `invalidArgument`) or
    /// the connection ends (`unavailable`).
    public func watch(prefixes: [String] = [""], fromRevision: UInt64? = nil) -> AsyncThrowingStream<WatchBatch, Error> {
        watch(prefixes: prefixes, start: fromRevision.map(WatchStart.after) ?? .snapshot)
    }

    /// Watches the keys under `prefixes`, starting where `start` says.
    public func watch(prefixes: [String], start: WatchStart) -> AsyncThrowingStream<WatchBatch, Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: WatchBatch.self)
        do throws(SharedStateError) {
            for prefix in prefixes { try KeyRules.validatePrefix(prefix, limits: limits) }
        } catch {
            continuation.finish(throwing: error)
            return stream
        }
        let id = router.makeRequestID()
        let router = self.router
        let channel = self.channel
        continuation.onTermination = { termination in
            guard case .cancelled = termination else { return }
            let cancelID = router.makeRequestID()
            guard router.removeWatch(id: id, cancelRequestID: cancelID) else { return }
            let frame = Self.requestFrame(id: cancelID, .cancelWatch(.with { $0.watchID = id }))
            channel.writeAndFlush(Frame.encode(frame, allocator: channel.allocator), promise: nil)
        }
        guard router.registerWatch(id: id, continuation) else { return stream }
        let request = Self.requestFrame(
            id: id,
            .watch(
                .with {
                    $0.prefixes = prefixes
                    switch start {
                    case .snapshot: $0.snapshot = true
                    case .now: break
                    case .after(let revision): $0.afterRevision = revision
                    }
                })
        )
        channel.writeAndFlush(Frame.encode(request, allocator: channel.allocator), promise: nil)
        return stream
    }

    // MARK: Plumbing

    private func call(_ operation: Sharedstate_V1_Request.OneOf_Operation) async throws(SharedStateError)
        -> Sharedstate_V1_Response.OneOf_Result
    {
        let id = router.makeRequestID()
        let frame = Self.requestFrame(id: id, operation)
        let channel = self.channel
        let response: Sharedstate_V1_Response
        do {
            response = try await router.call(id: id) {
                channel.writeAndFlush(Frame.encode(frame, allocator: channel.allocator), promise: nil)
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

    private static func requestFrame(id: UInt64, _ operation: Sharedstate_V1_Request.OneOf_Operation) -> Sharedstate_V1_ClientFrame {
        .with {
            $0.request = .with {
                $0.id = id
                $0.operation = operation
            }
        }
    }

    private func unexpected(_ result: Sharedstate_V1_Response.OneOf_Result) -> SharedStateError {
        SharedStateError(.protocolViolation, "syncd answered with an unexpected response: \(result)")
    }

    private static func describeConnectError(_ error: any Error) -> String {
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)) }
        return "\(error)"
    }
}
