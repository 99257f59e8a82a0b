import Foundation
import Logging
import NIOCore
import Synchronization

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
/// pipelined on one connection. When syncd goes away (a restart, a crash) the client reconnects
/// with backoff: meanwhile calls fail at once with `unavailable` (a write is never queued and
/// silently lost), and watches pause, then resume after the last revision they delivered. If that
/// revision was compacted meanwhile, a watch starts again from a snapshot and delivers only the
/// difference, as a ``WatchBatch/Kind-swift.struct/resync`` batch. ``connectionStates()`` reports
/// each transition.
///
/// Presence survives a restart of syncd: after reconnecting, and before its watches resume, the
/// client puts back the ephemeral keys it held, with the last values it wrote, each only if the
/// key does not exist (`ifVersion: 0`). If another process wrote the key meanwhile, that value
/// stays and the client stops holding the key.
public final class SharedStateClient: Sendable {
    /// How to reach syncd.
    public struct Configuration: Sendable {
        /// The Unix socket syncd listens on.
        public var socketPath: String
        /// A name for `syncctl clients` and syncd's logs.
        public var clientName: String
        /// The limits checked before sending, so mistakes fail without a round trip.
        public var limits: Limits = .default
        /// Whether to reconnect when syncd goes away; without it, the client closes instead.
        public var reconnects = true
        /// The longest wait between two reconnection attempts (the first is 50 ms, then doubling).
        public var maxReconnectDelay: Duration = .seconds(2)
        /// The cause of a write that names none, asked for at each write: the store runtime's
        /// `FeatureHost` answers with the feature and the action whose effect is writing.
        public var causeOfWrites: (@Sendable () -> String?)?
        /// Where the client says, at info level, what it does on its own: losing the
        /// connection, reconnecting, putting presence back. nil (the default): nowhere.
        /// `FeatureHost` gives its own.
        public var logger: Logger?

        /// A configuration for `socketPath`, or the default socket (see
        /// `DefaultLocations/clientSocketPath(environment:)`).
        public init(socketPath: String? = nil, clientName: String = ProcessInfo.processInfo.processName) {
            self.socketPath = socketPath ?? DefaultLocations.clientSocketPath(environment: ProcessInfo.processInfo.environment)
            self.clientName = clientName
        }
    }

    private struct State {
        var connection: Connection?
        var connectionState = ConnectionState.connected
        var watches: [UInt64: ManagedWatch] = [:]
        var observers: [UInt64: AsyncStream<ConnectionState>.Continuation] = [:]
        var reconnection: Task<Void, Never>?
        /// The ephemeral keys this client holds, with the last value it wrote to each.
        var presence: [String: Data] = [:]
        /// The session of the connection that ended last, whose ephemeral keys syncd is removing.
        var previousSessionID: UInt64 = 0
    }

    private let configuration: Configuration
    private let loopExecutor: EventLoopTaskExecutor
    private let state: Mutex<State>
    private let lastIdentifier = Atomic<UInt64>(0)

    private var limits: Limits { configuration.limits }

    /// The socket this client connects to.
    public var socketPath: String { configuration.socketPath }

    /// The current connection's session id, as syncd assigned it (0 while reconnecting).
    public var sessionID: UInt64 { state.withLock { $0.connection?.welcome.sessionID ?? 0 } }

    /// Whether the current connection's socket is read on the calling thread (under
    /// ``MainEventLoop``, on the main actor); false while reconnecting.
    package var readsOnThisThread: Bool { state.withLock { $0.connection?.channel.eventLoop.inEventLoop ?? false } }

    /// How many requests on the current connection were written to the socket by the thread
    /// that reads it: under ``MainEventLoop``, those made on the main actor (a request stays on
    /// its caller's actor until it is sent, then waits for its answer there).
    package var requestsWrittenByReadingThread: Int { state.withLock { $0.connection?.requestsWrittenByReadingThread ?? 0 } }

    /// syncd's revision when the current connection was made (0 while reconnecting).
    public var revisionAtConnect: UInt64 { state.withLock { $0.connection?.welcome.revision ?? 0 } }

    /// Whether the client is connected now.
    public var connectionState: ConnectionState { state.withLock { $0.connectionState } }

    /// The thread that reads this client's connections, as a task executor: a task that prefers
    /// it (`Task(executorPreference: client.executor)`, `withTaskExecutorPreference`) runs there
    /// and is resumed there by each answer and each watch batch, with no other thread woken —
    /// the cheapest way to make many calls or follow a busy watch, as a C client on one thread
    /// would.
    ///
    /// ```swift
    /// Task(executorPreference: client.executor) {
    ///     for try await batch in client.watch(prefixes: ["sensor/"]) { tally(batch) }
    /// }
    /// ```
    ///
    /// Such a task shares the thread with the socket's reads, as any code on an event loop does:
    /// while it computes or blocks, nothing is read for this client, nor for the other clients
    /// of the process that NIO gave the same thread. Keep its work short and non-blocking, and
    /// hand anything long to another task. Under ``MainEventLoop`` it is the main thread's
    /// executor. Reconnections stay on it.
    public var executor: any TaskExecutor { loopExecutor }

    /// A clock whose sleeps are timers of the loop behind ``executor``: a task that prefers the
    /// executor and paces itself with it wakes on that thread, without the two more thread
    /// wake-ups a sleep of `Task.sleep` costs (``EventLoopClock``). Its instants are
    /// `ContinuousClock`'s.
    public var clock: EventLoopClock { EventLoopClock(loopExecutor) }

    private init(configuration: Configuration, loopExecutor: EventLoopTaskExecutor, connection: Connection) {
        self.configuration = configuration
        self.loopExecutor = loopExecutor
        self.state = Mutex(State(connection: connection))
        watchForEnd(of: connection)
    }

    /// Connects to syncd and completes the handshake.
    ///
    /// - Throws: `SharedStateError` `unavailable` naming the socket when syncd cannot be reached,
    ///   `protocolViolation` when it refuses the handshake.
    public static func connect(_ configuration: Configuration = Configuration()) async throws(SharedStateError) -> SharedStateClient {
        let executor = EventLoopTaskExecutor.forNewClient()
        return SharedStateClient(
            configuration: configuration, loopExecutor: executor, connection: try await Connection.open(configuration, on: executor))
    }

    /// The connection state now, then every change to it; finishes when the client closes.
    public func connectionStates() -> AsyncStream<ConnectionState> {
        let (stream, continuation) = AsyncStream.makeStream(of: ConnectionState.self)
        let id = makeIdentifier()
        let current = state.withLock { state in
            if state.connectionState != .closed { state.observers[id] = continuation }
            return state.connectionState
        }
        continuation.yield(current)
        if current == .closed { continuation.finish() }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.observers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Returns once the client has closed: by ``close()``, or because syncd went away and
    /// reconnecting is turned off.
    public func waitUntilClosed() async {
        for await state in connectionStates() where state == .closed { return }
    }

    /// Closes the connection and stops reconnecting; waiting calls and watches end with
    /// `unavailable`.
    public func close() async {
        let connection = shutDown(reason: SharedStateError(.unavailable, "the client was closed"))
        try? await connection?.channel.close()
    }

    deinit {
        _ = shutDown(reason: SharedStateError(.unavailable, "the client was released"))
    }

    // MARK: Keys

    /// The entry of `key`, from syncd's copy of the state.
    ///
    /// - Throws: `notFound` when the key does not exist, `invalidArgument` for a malformed key.
    public nonisolated(nonsending) func get(_ key: String) async throws(SharedStateError) -> Entry {
        try await get(key, consistent: false)
    }

    /// The entry of `key`.
    ///
    /// - Parameters:
    ///   - consistent: Read through to the backend rather than syncd's copy: with syncd
    ///     on etcd, a linearizable read that sees every write any host had acknowledged before it.
    ///   - key: The key to read.
    /// - Throws: `notFound` when the key does not exist, `invalidArgument` for a malformed key.
    public nonisolated(nonsending) func get(_ key: String, consistent: Bool) async throws(SharedStateError) -> Entry {
        try KeyRules.validateKey(key, limits: limits)
        let result = try await call(
            .get(
                .with {
                    $0.key = key
                    $0.consistent = consistent
                }))
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
    ///   - key: The key to write.
    ///   - value: Its new value: one JSON document, as UTF-8 bytes.
    /// - Throws: `conflict` when `ifVersion` does not match, `invalidArgument` or `tooLarge` for a
    ///   bad key or value, `unavailable` when syncd is gone.
    @discardableResult
    public nonisolated(nonsending) func put(
        _ key: String,
        value: Data,
        ifVersion: UInt64? = nil,
        ephemeral: Bool = false
    ) async throws(SharedStateError) -> PutResult {
        try await put(key, value: value, ifVersion: ifVersion, ephemeral: ephemeral, cause: defaultCause)
    }

    /// The cause of a write that names none (see ``Configuration/causeOfWrites``).
    private var defaultCause: String { configuration.causeOfWrites?() ?? "" }

    /// Sets `key` to `value`, saying why; see ``put(_:value:ifVersion:ephemeral:)``.
    ///
    /// - Parameters:
    ///   - cause: Why, in the writer's words (`"door-lock: requestApplied(r7)"`): kept
    ///     with the revision and shown by `syncctl history` and `watch`. At most 256 bytes.
    ///   - key: The key to write.
    ///   - value: Its new value: one JSON document, as UTF-8 bytes.
    ///   - ifVersion: Write only if the key is at this version; 0 means "only if it does not exist".
    ///   - ephemeral: Bind the key to this connection: syncd deletes it when the connection closes.
    @discardableResult
    public nonisolated(nonsending) func put(
        _ key: String,
        value: Data,
        ifVersion: UInt64? = nil,
        ephemeral: Bool = false,
        cause: String
    ) async throws(SharedStateError) -> PutResult {
        try KeyRules.validateKey(key, limits: limits)
        try ValueRules.validateValue(value, limits: limits)
        try RequestRules.validateCause(cause)
        let result = try await connection().call { id in
            PutRequestFrame.encode(id: id, key: key, value: value, ifVersion: ifVersion, ephemeral: ephemeral, cause: cause)
        }
        guard case .put(let put) = result else { throw unexpected(result) }
        state.withLock { state in
            // Most puts are not ephemeral, and most clients hold no presence to forget.
            if ephemeral || !state.presence.isEmpty { state.presence[key] = ephemeral ? value : nil }
        }
        return PutResult(revision: put.revision, version: put.version)
    }

    /// Removes `key` and returns the revision of the removal.
    ///
    /// - Throws: `notFound` when the key does not exist, `conflict` when `ifVersion` does not match.
    @discardableResult
    public nonisolated(nonsending) func delete(_ key: String, ifVersion: UInt64? = nil) async throws(SharedStateError) -> UInt64 {
        try await delete(key, ifVersion: ifVersion, cause: defaultCause)
    }

    /// Removes `key`, saying why; see ``delete(_:ifVersion:)`` and the `cause` of
    /// ``put(_:value:ifVersion:ephemeral:cause:)``.
    @discardableResult
    public nonisolated(nonsending) func delete(_ key: String, ifVersion: UInt64? = nil, cause: String) async throws(SharedStateError)
        -> UInt64
    {
        try KeyRules.validateKey(key, limits: limits)
        try RequestRules.validateCause(cause)
        let result = try await call(
            .delete(
                .with {
                    $0.key = key
                    if let ifVersion { $0.ifVersion = ifVersion }
                    $0.cause = cause
                })
        )
        guard case .delete(let delete) = result else { throw unexpected(result) }
        state.withLock { $0.presence[key] = nil }
        return delete.revision
    }

    /// The entries whose keys start with `prefix`, in key order.
    ///
    /// - Parameters:
    ///   - limit: At most this many entries; ``ListResult/isTruncated`` tells if more exist.
    ///   - prefix: The prefix the keys start with; empty for every key.
    public nonisolated(nonsending) func list(prefix: String = "", limit: Int? = nil) async throws(SharedStateError) -> ListResult {
        try await list(prefix: prefix, startingAt: "", limit: limit)
    }

    /// The entries whose keys start with `prefix`, in key order, from the first key at or after
    /// `start` (in byte order) on: the next page of a long list starts at the key after the last
    /// one read, and a reader skips what lies under a key's folder by starting past it.
    ///
    /// ```swift
    /// var page = try await client.list(prefix: "doors/", limit: 100)
    /// while page.isTruncated, let last = page.entries.last {
    ///     page = try await client.list(prefix: "doors/", startingAt: last.key + "\0", limit: 100)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - prefix: Leading bytes of the keys; empty lists every key.
    ///   - start: The first key to list, if it exists; keys before it are left out. Empty, or
    ///     before `prefix`: from the first key under `prefix`.
    ///   - limit: At most this many entries; ``ListResult/isTruncated`` tells if more exist.
    public nonisolated(nonsending) func list(
        prefix: String = "", startingAt start: String, limit: Int? = nil
    ) async throws(SharedStateError) -> ListResult {
        try KeyRules.validatePrefix(prefix, limits: limits)
        try RequestRules.validateListLimit(limit)
        let result = try await call(
            .list(
                .with {
                    $0.prefix = prefix
                    $0.start = start
                    $0.limit = UInt32(clamping: limit ?? 0)
                })
        )
        guard case .list(let list) = result else { throw unexpected(result) }
        return ListResult(entries: list.entries.map(Entry.init(wireValue:)), revision: list.revision, isTruncated: list.truncated)
    }

    /// How many keys start with `prefix`, of those this client may read, without their entries
    /// (etcd's `get --prefix --count-only`).
    ///
    /// ```swift
    /// let online = try await client.count(prefix: "presence/")
    /// print("\(online.count) feature processes at revision \(online.revision)")
    /// ```
    ///
    /// - Parameter prefix: Leading bytes of the keys to count; empty counts every key.
    /// - Throws: `invalidArgument` for a malformed prefix, `permissionDenied` when this client may
    ///   read no key under it.
    public nonisolated(nonsending) func count(prefix: String = "") async throws(SharedStateError) -> CountResult {
        try KeyRules.validatePrefix(prefix, limits: limits)
        let result = try await call(.count(.with { $0.prefix = prefix }))
        guard case .count(let count) = result else { throw unexpected(result) }
        return CountResult(count: Int(clamping: count.count), revision: count.revision)
    }

    /// Applies a transaction atomically; see ``Transaction``.
    ///
    /// - Throws: `conflict` when an operation's own `ifVersion` fails (nothing is applied),
    ///   `invalidArgument` when a branch writes one key twice.
    public nonisolated(nonsending) func transaction(_ transaction: Transaction) async throws(SharedStateError) -> TransactionResult {
        try RequestRules.validateCause(transaction.cause)
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
                    $0.cause = transaction.cause.isEmpty ? defaultCause : transaction.cause
                })
        )
        guard case .transaction(let outcome) = result else { throw unexpected(result) }
        let applied = outcome.succeeded ? transaction.onSuccess : transaction.onFailure
        state.withLock { state in
            for operation in applied {
                state.presence[operation.key] = operation.isEphemeral ? operation.value : nil
            }
        }
        return TransactionResult(succeeded: outcome.succeeded, revision: outcome.revision)
    }

    /// A summary of the daemon.
    public nonisolated(nonsending) func status() async throws(SharedStateError) -> ServerStatus {
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
            databasePath: status.databasePath,
            backend: status.backend.isEmpty ? "sqlite" : status.backend,
            backendRevision: status.backendRevision,
            staleSince: status.staleSince > 0 ? Date(timeIntervalSince1970: status.staleSince) : nil,
            durability: status.durability.isEmpty
                ? nil
                : DurabilityStatus(
                    mode: status.durability, syncIntervalSeconds: status.syncIntervalSeconds, unsyncedSeconds: status.unsyncedSeconds,
                    unsyncedBytes: status.unsyncedBytes, longestUnsyncedSeconds: status.longestUnsyncedSeconds,
                    unmovedBytes: status.unmovedBytes)
        )
    }

    /// The changes of `key` still in the change log, oldest first.
    ///
    /// - Parameters:
    ///   - limit: Only the most recent `limit` changes.
    ///   - key: The key whose changes to read.
    public nonisolated(nonsending) func history(of key: String, limit: Int? = nil) async throws(SharedStateError) -> KeyHistory {
        try KeyRules.validateKey(key, limits: limits)
        if let limit, limit < 1 {
            throw SharedStateError(.invalidArgument, "history limit must be at least 1, not \(limit)")
        }
        let result = try await call(
            .history(
                .with {
                    $0.key = key
                    $0.limit = UInt32(clamping: limit ?? 0)
                }
            )
        )
        guard case .history(let history) = result else { throw unexpected(result) }
        let origins = history.changes.indices.map { index in
            // A syncd from before writers were recorded sends none: an empty origin (no client name).
            let origin = index < history.origins.count ? history.origins[index] : Sharedstate_V1_Origin()
            return ChangeOrigin(
                writer: Writer(
                    sessionID: origin.writer.sessionID, clientName: origin.writer.clientName,
                    pid: origin.writer.pid, uid: origin.writer.uid, gid: origin.writer.gid),
                cause: origin.cause
            )
        }
        return KeyHistory(
            changes: history.changes.map { Change(wireValue: $0) }, origins: origins, compactedRevision: history.compactedRevision)
    }

    /// Every client connected to syncd, this one included (syncd's own user and root only).
    ///
    /// - Parameter details: Also each client's watches and ephemeral keys
    ///   (``ClientInfo/watchList``, ``ClientInfo/ephemeralKeys``).
    public nonisolated(nonsending) func clients(details: Bool = false) async throws(SharedStateError) -> [ClientInfo] {
        let result = try await call(.clients(.with { $0.details = details }))
        guard case .clients(let clients) = result else { throw unexpected(result) }
        return clients.clients.map {
            ClientInfo(
                sessionID: $0.sessionID,
                name: $0.name,
                pid: $0.pid,
                uid: $0.uid,
                gid: $0.gid,
                watches: $0.watches,
                queuedBytes: $0.queuedBytes,
                resyncs: $0.resyncs,
                eventsDelivered: $0.eventsDelivered,
                schemaRefusals: $0.schemaRefusals,
                connectedSeconds: $0.connectedSeconds,
                admission: ClientInfo.Admission($0.admission),
                lastSchemaRefusal: $0.hasLastSchemaRefusal ? SchemaViolation(wireValue: $0.lastSchemaRefusal) : nil,
                watchList: $0.watchList.map {
                    ClientInfo.WatchInfo(
                        id: $0.watchID, prefixes: $0.prefixes, previousValues: $0.previousValues, isCatchingUp: $0.catchingUp,
                        owesResync: $0.owesResync)
                },
                ephemeralKeys: $0.ephemeralKeys,
                ephemeralKeyCount: $0.ephemeralKeyCount
            )
        }
    }

    /// syncd's metrics in Prometheus's text format (syncd's own user and root only).
    ///
    /// - Throws: `permissionDenied` for anyone else.
    public nonisolated(nonsending) func metrics() async throws(SharedStateError) -> String {
        let result = try await call(.metrics(.init()))
        guard case .metrics(let metrics) = result else { throw unexpected(result) }
        return metrics.text
    }

    /// Removes the change log up to and including `revision`; watches can no longer resume from
    /// before it. Returns the compacted revision.
    ///
    /// - Throws: `invalidArgument` for a revision above the current one.
    @discardableResult
    public nonisolated(nonsending) func compact(through revision: UInt64) async throws(SharedStateError) -> UInt64 {
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
    /// changes arrive in one batch, in revision order, with no gap and no duplicate; idle watches
    /// get ``WatchBatch/Kind-swift.struct/progress`` batches. Across reconnects the watch resumes
    /// where it stopped. A consumer that falls behind gets the batches it has not taken folded
    /// into one resync (see ``WatchStream``), so the client's memory stays bounded.
    ///
    /// Stop consuming (or cancel the consuming task) to cancel the watch on the daemon. The
    /// stream ends with an error when the watch cannot start (`compacted` for a `fromRevision`
    /// already compacted, `invalidArgument`) or the client closes (`unavailable`).
    public func watch(prefixes: [String] = [""], fromRevision: UInt64? = nil) -> WatchStream {
        watch(prefixes: prefixes, start: fromRevision.map(WatchStart.after) ?? .snapshot)
    }

    /// Watches the keys under `prefixes`, starting where `start` says.
    ///
    /// With `previousValues`, every change of a ``WatchBatch/Kind-swift.struct/changes`` batch
    /// carries the key's entry before it in `Change/previous` (like etcd's `prev_kv`), so a
    /// consumer can diff each change (`Change/diff()`) without keeping what it saw. syncd finds
    /// them for replayed revisions too, except where the entry before is older than the change
    /// log holds (`Change/Previous/unknown`). Changes folded for a slow consumer keep the entry
    /// before the first of them; a resync from syncd has none.
    public func watch(prefixes: [String], start: WatchStart, previousValues: Bool = false) -> WatchStream {
        do throws(SharedStateError) {
            for prefix in prefixes { try KeyRules.validatePrefix(prefix, limits: limits) }
        } catch {
            return .failed(error)
        }
        let buffer = WatchBuffer()
        let stream = WatchStream(buffer: buffer)
        let watch = ManagedWatch(prefixes: prefixes, start: start, previousValues: previousValues, buffer: buffer)
        let id = makeIdentifier()
        let (connection, isClosed) = state.withLock { state in
            if state.connectionState != .closed { state.watches[id] = watch }
            return (state.connection, state.connectionState == .closed)
        }
        if isClosed {
            buffer.finish(throwing: SharedStateError(.unavailable, "the client is closed"))
            return stream
        }
        buffer.onTermination { [weak self] in
            guard let self, let watch = self.state.withLock({ $0.watches.removeValue(forKey: id) }) else { return }
            watch.cancel()
        }
        // While reconnecting, the watch starts when the next connection is made.
        if let connection { watch.run(on: connection) }
        return stream
    }

    // MARK: Connection

    nonisolated(nonsending) func call(_ operation: Sharedstate_V1_Request.OneOf_Operation) async throws(SharedStateError)
        -> Sharedstate_V1_Response.OneOf_Result
    {
        try await connection().call(operation)
    }

    /// The connection requests go to now; `unavailable` while there is none.
    private func connection() throws(SharedStateError) -> Connection {
        let (connection, connectionState) = state.withLock { ($0.connection, $0.connectionState) }
        guard let connection else {
            throw SharedStateError(
                .unavailable,
                connectionState == .closed
                    ? "the client is closed" : "not connected to syncd at \(socketPath); reconnecting"
            )
        }
        return connection
    }

    private func makeIdentifier() -> UInt64 {
        lastIdentifier.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// Reconnects when `connection` ends, unless the client closed.
    private func watchForEnd(of connection: Connection) {
        connection.channel.closeFuture.whenComplete { [weak self] _ in
            self?.connectionEnded(connection)
        }
    }

    private func connectionEnded(_ connection: Connection) {
        let shouldReconnect = state.withLock { state in
            guard state.connection === connection else { return false }
            state.connection = nil
            state.previousSessionID = connection.welcome.sessionID
            return configuration.reconnects
        }
        guard shouldReconnect else {
            if state.withLock({ $0.connectionState }) == .connected {
                _ = shutDown(reason: SharedStateError(.unavailable, "the connection to syncd at \(socketPath) closed"))
            }
            return
        }
        configuration.logger?.info("lost the connection to syncd at \(socketPath); reconnecting")
        publish(.reconnecting)
        // A task of its own: the client is used from arbitrary tasks and has no run() that could
        // own it. It holds the client weakly and is cancelled by close().
        let task = Task { [weak self, configuration, loopExecutor] in
            var backoff = Backoff(initial: .milliseconds(50), maximum: configuration.maxReconnectDelay)
            while !Task.isCancelled {
                try? await Task.sleep(for: backoff.next())
                guard !Task.isCancelled, self != nil else { return }
                if let connection = try? await Connection.open(configuration, on: loopExecutor) {
                    guard let self else {
                        connection.close()
                        return
                    }
                    let presence = await self.restorePresence(on: connection)
                    self.adopt(connection)
                    self.logReconnection(connection, presence: presence)
                    return
                }
            }
        }
        state.withLock { state in
            if state.connectionState == .closed { task.cancel() } else { state.reconnection = task }
        }
    }

    /// What putting presence back on a new connection did, key by key.
    private struct RestoredPresence {
        var restored: [String] = []
        var takenOver: [String] = []
        var failed: [String] = []
    }

    /// Puts back the ephemeral keys this client held, on a new connection, before anything else
    /// uses it; a key another process wrote meanwhile is left to it.
    private func restorePresence(on connection: Connection) async -> RestoredPresence {
        let previousSession = state.withLock { $0.previousSessionID }
        var outcome = RestoredPresence()
        for (key, value) in state.withLock({ $0.presence }).sorted(by: { $0.key < $1.key }) {
            switch await putBack(key, value, on: connection, previousSession: previousSession) {
            case .restored:
                outcome.restored.append(key)
            case .takenOver:
                outcome.takenOver.append(key)
                state.withLock { if $0.presence[key] == value { $0.presence[key] = nil } }
            case .failed where connection.router.hasEnded:
                // The new connection failed too: it is replaced, and this runs again.
                return outcome
            case .failed:
                // Refused for this key alone (a limit changed, say): kept for the next reconnect.
                outcome.failed.append(key)
            }
        }
        return outcome
    }

    /// Says, at info level, that the client is connected again and what became of its presence.
    private func logReconnection(_ connection: Connection, presence: RestoredPresence) {
        guard let logger = configuration.logger else { return }
        var message = "reconnected to syncd at \(socketPath) as session \(connection.welcome.sessionID)"
        func keys(_ keys: [String]) -> String { keys.map { KeyRules.quoted($0) }.joined(separator: ", ") }
        if !presence.restored.isEmpty {
            let count = presence.restored.count
            message += "; put back \(count) ephemeral key\(count == 1 ? "" : "s"): \(keys(presence.restored))"
        }
        if !presence.takenOver.isEmpty { message += "; left to the process that wrote them meanwhile: \(keys(presence.takenOver))" }
        if !presence.failed.isEmpty { message += "; could not put back (tried again at the next reconnect): \(keys(presence.failed))" }
        logger.info("\(message)")
    }

    private enum PutBack { case restored, takenOver, failed }

    /// Puts `key` back if it does not exist. If it still holds this client's key of the previous
    /// session (syncd did not restart, and removes that session's keys in its own time), waits
    /// up to two seconds for the removal first; a key that went away after the put was refused is
    /// tried again.
    private func putBack(_ key: String, _ value: Data, on connection: Connection, previousSession: UInt64) async -> PutBack {
        let deadline = ContinuousClock.now.advanced(by: .seconds(2))
        while true {
            do throws(SharedStateError) {
                _ = try await connection.call(
                    .put(
                        .with {
                            $0.key = key
                            $0.value = value
                            $0.ifVersion = 0
                            $0.ephemeral = true
                        }
                    )
                )
                return .restored
            } catch  where error.code == .conflict {
                guard ContinuousClock.now < deadline else { return .takenOver }
                let current: Sharedstate_V1_Response.OneOf_Result
                do throws(SharedStateError) {
                    current = try await connection.call(.get(.with { $0.key = key }))
                } catch  where error.code == .notFound {
                    // Gone since the put was refused: try the put again.
                    continue
                } catch {
                    return .failed
                }
                guard case .get(let get) = current, previousSession != 0, get.entry.ephemeralSession == previousSession else {
                    return .takenOver
                }
                // Still this client's key of its previous session: syncd removes it shortly.
                try? await Task.sleep(for: .milliseconds(20))
            } catch {
                return .failed
            }
        }
    }

    private func adopt(_ connection: Connection) {
        let watches: [ManagedWatch]? = state.withLock { state in
            guard state.connectionState != .closed else { return nil }
            state.connection = connection
            state.reconnection = nil
            // Restarted in the order they were first started, so that syncd, which hands a
            // revision to a connection's watches in the order they started on it, keeps that order.
            return state.watches.sorted { $0.key < $1.key }.map(\.value)
        }
        guard let watches else {
            connection.close()
            return
        }
        watchForEnd(of: connection)
        for watch in watches { watch.run(on: connection) }
        publish(.connected)
    }

    private func publish(_ connectionState: ConnectionState) {
        let observers = state.withLock { state in
            state.connectionState = connectionState
            return Array(state.observers.values)
        }
        for observer in observers { observer.yield(connectionState) }
    }

    /// Marks the client closed and ends everything; returns the connection to close.
    private func shutDown(reason: SharedStateError) -> Connection? {
        let (connection, watches, observers, reconnection) = state.withLock { state in
            defer {
                state.connection = nil
                state.watches = [:]
                state.observers = [:]
                state.reconnection = nil
                state.connectionState = .closed
            }
            return (state.connection, Array(state.watches.values), Array(state.observers.values), state.reconnection)
        }
        reconnection?.cancel()
        connection?.close()
        for watch in watches { watch.finish(throwing: reason) }
        for observer in observers {
            observer.yield(.closed)
            observer.finish()
        }
        return connection
    }

    func unexpected(_ result: Sharedstate_V1_Response.OneOf_Result) -> SharedStateError {
        SharedStateError(.protocolViolation, "syncd answered with an unexpected response: \(result)")
    }
}
