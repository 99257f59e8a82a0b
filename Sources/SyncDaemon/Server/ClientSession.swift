import Foundation
import Logging
import NIOCore
import NIOPosix
import SharedStateWire

/// The protocol logic of one client connection: the handshake, then each request checked and
/// handed to the engine. Reads are answered at once; writes are answered when they commit.
///
/// It does no I/O of its own: frames come in through ``receive(_:)`` and go out through the
/// connection's writer. It lives on its connection's event loop, which hands it one frame at a
/// time; a request that has to wait (a replay, a backup, reading the history) returns a
/// ``Suspension`` for the caller to run, and nothing else is handed in until it has finished.
final class ClientSession {
    /// What the connection should do after a frame.
    enum Step {
        case next
        /// Send this error as the last frame and close.
        case close(SharedStateError)
        /// Run this request's work off the event loop, then ``finish(_:with:)`` it; read no more
        /// frames meanwhile, so requests keep their order.
        case suspend(Suspension)
    }

    /// A request whose answer needs waiting for.
    struct Suspension: Sendable {
        let requestID: UInt64
        /// The work: the response to send, or nil when the work has answered by itself.
        let work: @Sendable () async -> Result<Sharedstate_V1_Response.OneOf_Result?, SharedStateError>
        /// A transfer to end if the work fails.
        var abandonsTransfer: UInt64?
        /// A transfer to end once the work is done, whatever its outcome.
        var usesUpTransfer: UInt64?
        /// Whether the work is a write the connection counts as owed (see
        /// ``ConnectionWriter/expectAnswers(_:)``), so that a drain waits for its answer.
        var isWrite = false
    }

    /// What every session of a server shares.
    struct Environment: Sendable {
        var engine: StateEngine
        var settings: RuntimeSettings
        /// Where backup and restore transfers keep their temporary files.
        var transferDirectory: String
        var logger: Logger
        var status: @Sendable () -> Sharedstate_V1_StatusResponse
        var clients: @Sendable () async -> [Sharedstate_V1_ClientInfo]
    }

    /// Who the peer is, for `clients`, status and logs.
    let record: ClientRecord
    private var hasGreeted = false
    /// Whether this session ever asked for an ephemeral key (then its end must clean up).
    private var hasWrittenEphemeral = false
    private var writer: ConnectionWriter { record.writer }
    private let engine: StateEngine
    private let settings: RuntimeSettings
    private let environment: Environment
    private let transfers: TransferStore
    private let accessCache: PermissionCache
    /// Writes checked and not yet handed to the engine: they go together, once per read.
    private var queuedWrites: [(id: UInt64, request: WriteRequest)] = []
    private var logger: Logger { environment.logger }

    private let admitGreeting: () -> SharedStateError?

    /// - Parameter admitGreeting: Called when the client says Hello: lets it count as a client,
    ///   or says why not (the connection limits apply then).
    init(record: ClientRecord, environment: Environment, admitGreeting: @escaping () -> SharedStateError? = { nil }) {
        self.admitGreeting = admitGreeting
        self.record = record
        self.environment = environment
        self.accessCache = PermissionCache(principal: record.principal, settings: environment.settings)
        self.transfers = TransferStore(directory: environment.transferDirectory, sessionID: record.sessionID)
        self.engine = environment.engine
        self.settings = environment.settings
    }

    /// Handles one inbound frame.
    func receive(_ payload: ByteBuffer) -> Step {
        let frame: Sharedstate_V1_ClientFrame
        do {
            frame = try Frame.decode(Sharedstate_V1_ClientFrame.self, from: payload)
        } catch {
            return .close(error)
        }
        switch frame.kind {
        case .hello(let hello):
            return greet(hello)
        case .request(let request):
            guard hasGreeted else {
                return .close(SharedStateError(.protocolViolation, "the first frame must be a Hello"))
            }
            return handle(request)
        case nil:
            return .close(SharedStateError(.protocolViolation, "empty client frame"))
        }
    }

    /// Hands the writes checked since the last call to the engine, as one group.
    func submitQueuedWrites() {
        guard !queuedWrites.isEmpty else { return }
        // One write from a client that waits for each answer: latency is what it feels.
        let waitsForEach = queuedWrites.count == 1 && !writer.owesAnswers
        writer.expectAnswers(queuedWrites.count)
        engine.submit(queuedWrites, answeringTo: writer, mayCommitHere: waitsForEach)
        queuedWrites.removeAll(keepingCapacity: true)
    }

    /// Answers a suspended request once its work is done.
    func finish(_ suspension: Suspension, with result: Result<Sharedstate_V1_Response.OneOf_Result?, SharedStateError>) {
        switch result {
        case .success(let response?):
            respond(suspension.requestID) { $0.result = response }
        case .success(nil):
            break
        case .failure(let error):
            if let transfer = suspension.abandonsTransfer { try? transfers.end(transfer) }
            respond(suspension.requestID) { $0.error = error.wireValue }
        }
        if let transfer = suspension.usesUpTransfer { try? transfers.end(transfer) }
        if suspension.isWrite { writer.answeredElsewhere(1) }
    }

    /// Called once the connection is gone: ends its watches and deletes its ephemeral keys.
    func end() {
        engine.removeWatches(of: writer)
        if hasWrittenEphemeral { engine.endSession(record.sessionID) }
        transfers.removeAll()
    }

    private func greet(_ hello: Sharedstate_V1_Hello) -> Step {
        if hasGreeted {
            return .close(SharedStateError(.protocolViolation, "Hello sent twice"))
        }
        guard hello.protocolVersion == WireProtocol.version else {
            return .close(
                SharedStateError(
                    .protocolViolation,
                    "unsupported protocol version \(hello.protocolVersion); this syncd speaks version \(WireProtocol.version)"
                )
            )
        }
        if let refusal = admitGreeting() { return .close(refusal) }
        hasGreeted = true
        record.hasGreeted = true
        record.clientName = String(hello.clientName.prefix(128))
        logger.debug("client greeted", metadata: ["session": "\(record.sessionID)", "name": "\(record.clientName)"])
        send(
            .with {
                $0.welcome = .with {
                    $0.protocolVersion = WireProtocol.version
                    $0.revision = engine.revision
                    $0.sessionID = record.sessionID
                    $0.serverVersion = WireProtocol.softwareVersion
                }
            }
        )
        return .next
    }

    private func handle(_ request: Sharedstate_V1_Request) -> Step {
        let id = request.id
        let limits = settings.limits
        let access = permissions
        do throws(SharedStateError) {
            switch request.operation {
            case .get(let get):
                try KeyRules.validateKey(get.key, limits: limits)
                try requireRead(get.key, access)
                let (entry, revision) = engine.entry(get.key)
                guard let entry else { throw RequestRules.notFound(get.key) }
                respond(id) {
                    $0.get = .with {
                        $0.entry = entry.wireValue
                        $0.revision = revision
                    }
                }
                return .next

            case .put(let put):
                let operation = try writeOperation(.put(put), limits: limits)
                try requireWrite(operation.key, access)
                queuedWrites.append((id, operation.request))
                return .next

            case .delete(let delete):
                let operation = try writeOperation(.delete(delete), limits: limits)
                try requireWrite(operation.key, access)
                queuedWrites.append((id, operation.request))
                return .next

            case .transaction(let transaction):
                let request = try transactionRequest(transaction, limits: limits)
                if case .transaction(let compares, let onSuccess, let onFailure) = request {
                    // A compare reveals whether a value matches: it needs read access.
                    for compare in compares { try requireRead(compare.key, access) }
                    for operation in onSuccess + onFailure { try requireWrite(operation.key, access) }
                }
                queuedWrites.append((id, request))
                return .next

            case .list(let list):
                try KeyRules.validatePrefix(list.prefix, limits: limits)
                try requireSomeRead(under: [list.prefix], access)
                let outcome = engine.list(
                    prefix: list.prefix,
                    limit: list.limit == 0 ? nil : Int(list.limit),
                    readable: readFilter(access)
                )
                switch outcome {
                case .listed(let listing):
                    respond(id) { $0.list = Self.listResponse(listing) }
                    return .next
                case .tooLarge(let large):
                    // Read and encoded on the thread pool: a million entries take a second.
                    let writer = self.writer
                    return suspend(id) { () async throws(SharedStateError) in
                        let frame = try await Self.onThreadPool { () throws(SharedStateError) in
                            Self.responseFrame(id) { $0.list = Self.listResponse(large.read()) }
                        }
                        writer.send([frame])
                        return nil
                    }
                }

            case .watch(let watch):
                try RequestRules.validateWatchPrefixCount(watch.prefixes.count, limits: limits)
                for prefix in watch.prefixes { try KeyRules.validatePrefix(prefix, limits: limits) }
                try requireSomeRead(under: watch.prefixes, access)
                if engine.watchCount(of: writer) >= limits.maxWatchesPerConnection {
                    throw SharedStateError(
                        .limitReached,
                        "this connection already has \(limits.maxWatchesPerConnection) watches, the limit; cancel one first"
                    )
                }
                let start: WatchStart =
                    switch watch.start {
                    case .snapshot(true): .snapshot
                    case .afterRevision(let revision): .after(revision)
                    case .snapshot(false), nil: .now
                    }
                let catchUp = try engine.beginWatch(
                    id: id,
                    prefixes: watch.prefixes,
                    start: start,
                    readable: readFilter(access),
                    ending: endingCheck(prefixes: watch.prefixes),
                    subscriber: writer
                )
                guard let catchUp else { return .next }
                let engine = self.engine
                return suspend(id) { () async throws(SharedStateError) in
                    try await engine.catchUp(catchUp)
                    return nil
                }

            case .cancelWatch(let cancel):
                guard engine.cancelWatch(id: cancel.watchID, of: writer) else {
                    throw SharedStateError(.notFound, "no watch with id \(cancel.watchID) on this connection")
                }
                respond(id) { $0.cancelWatch = .init() }
                return .next

            case .status:
                let status = environment.status()
                respond(id) { $0.status = status }
                return .next

            case .history(let history):
                try KeyRules.validateKey(history.key, limits: limits)
                try requireRead(history.key, access)
                let (engine, key, limit) = (self.engine, history.key, history.limit == 0 ? nil : Int(history.limit))
                return suspend(id) { () async throws(SharedStateError) in
                    let result = try await engine.history(of: key, limit: limit)
                    return .history(
                        .with {
                            $0.changes = result.changes.map(\.wireValue)
                            $0.compactedRevision = result.compactedRevision
                        }
                    )
                }

            case .clients:
                try requireAdministrator("list clients", access)
                let clients = environment.clients
                return suspend(id) { () async throws(SharedStateError) in
                    let clients = await clients()
                    return .clients(.with { $0.clients = clients })
                }

            case .backup:
                try requireAdministrator("back up the database", access)
                let transfer = try transfers.open()
                let engine = self.engine
                return suspend(id, abandoning: transfer.id) { () async throws(SharedStateError) in
                    let revision = try await engine.backup(to: transfer.path)
                    let size = (try? FileManager.default.attributesOfItem(atPath: transfer.path)[.size] as? NSNumber)?.uint64Value ?? 0
                    return .backup(
                        .with {
                            $0.transferID = transfer.id
                            $0.size = size
                            $0.revision = revision
                        }
                    )
                }

            case .transferRead(let read):
                let (transferID, offset, length) = (read.transferID, read.offset, Int(read.length))
                let path = try transfers.readable(transferID, length: length)
                // File I/O never on the event loop: the connection waits, others go on.
                return suspend(id) { () async throws(SharedStateError) in
                    let data = try await Self.onThreadPool { () throws(SharedStateError) in
                        try TransferStore.readChunk(of: transferID, at: path, offset: offset, length: length)
                    }
                    return .transferRead(.with { $0.data = data })
                }

            case .transferWrite(let write):
                try requireAdministrator("upload a backup", access)
                let isNew = write.transferID == 0
                let transferID = isNew ? try transfers.open().id : write.transferID
                let path: String
                do {
                    path = try transfers.appendable(transferID, size: write.data.count)
                } catch {
                    if isNew { try? transfers.end(transferID) }
                    throw error
                }
                let data = write.data
                // A new transfer that fails its first chunk is ended.
                return suspend(id, abandoning: isNew ? transferID : nil) { () async throws(SharedStateError) in
                    let size = try await Self.onThreadPool { () throws(SharedStateError) in
                        try TransferStore.appendChunk(data, to: transferID, at: path)
                    }
                    return .transferWrite(
                        .with {
                            $0.transferID = transferID
                            $0.size = size
                        }
                    )
                }

            case .transferEnd(let end):
                try transfers.end(end.transferID)
                respond(id) { $0.transferEnd = .init() }
                return .next

            case .restore(let restore):
                try requireAdministrator("restore a backup", access)
                let path = try transfers.path(of: restore.transferID)
                let engine = self.engine
                // The upload is used up whatever happens next. A write: a drain waits for its answer.
                writer.expectAnswers(1)
                return suspend(id, usingUp: restore.transferID, isWrite: true) { () async throws(SharedStateError) in
                    let entries = try await Self.readBackup(at: path, limits: limits)
                    let outcome = await withCheckedContinuation { continuation in
                        engine.submit(.restore(entries: entries)) { continuation.resume(returning: $0) }
                    }
                    guard case .restored(let revision, let puts, let deletes) = try outcome.get() else {
                        throw SharedStateError(.unavailable, "the restore was committed as something else")
                    }
                    return .restore(
                        .with {
                            $0.revision = revision
                            $0.puts = UInt64(puts)
                            $0.deletes = UInt64(deletes)
                        }
                    )
                }

            case .compact(let compact):
                try requireAdministrator("compact the change log", access)
                let (engine, revision) = (self.engine, compact.revision)
                return suspend(id) { () async throws(SharedStateError) in
                    let compacted = try await engine.compact(through: revision)
                    return .compact(.with { $0.compactedRevision = compacted })
                }

            case nil:
                throw SharedStateError(.invalidArgument, "request \(id) names no operation")
            }
        } catch {
            respond(id) { $0.error = error.wireValue }
            return .next
        }
    }

    private static func listResponse(_ listing: StateEngine.Listing) -> Sharedstate_V1_ListResponse {
        .with {
            $0.entries = listing.entries.map(\.wireValue)
            $0.revision = listing.revision
            $0.truncated = listing.hasMore
        }
    }

    /// A request that finishes off the event loop.
    /// Reads an uploaded backup and checks its entries against `limits`, on NIO's thread pool:
    /// a backup of a million keys takes seconds to read, which no event loop may spend.
    private static func readBackup(at path: String, limits: Limits) async throws(SharedStateError) -> [Entry] {
        try await onThreadPool { () throws(SharedStateError) in
            let entries = try Storage.entries(inBackup: path)
            for entry in entries {
                try KeyRules.validateKey(entry.key, limits: limits)
                try ValueRules.validateValue(entry.value, limits: limits)
            }
            return entries
        }
    }

    /// Runs blocking file I/O on NIO's thread pool, keeping its `SharedStateError`.
    private static func onThreadPool<T: Sendable>(
        _ work: @escaping @Sendable () throws(SharedStateError) -> T
    ) async throws(SharedStateError) -> T {
        do {
            return try await NIOThreadPool.singleton.runIfActive { try work() }
        } catch let error as SharedStateError {
            throw error
        } catch {
            throw SharedStateError(.unavailable, "blocking I/O failed: \(error)")
        }
    }

    private func suspend(
        _ id: UInt64,
        abandoning transfer: UInt64? = nil,
        usingUp usedTransfer: UInt64? = nil,
        isWrite: Bool = false,
        _ work: @escaping @Sendable () async throws(SharedStateError) -> Sharedstate_V1_Response.OneOf_Result?
    ) -> Step {
        .suspend(
            Suspension(
                requestID: id,
                work: {
                    do throws(SharedStateError) {
                        return .success(try await work())
                    } catch {
                        return .failure(error)
                    }
                },
                abandonsTransfer: transfer,
                usesUpTransfer: usedTransfer,
                isWrite: isWrite
            )
        )
    }

    private func writeOperation(_ operation: Sharedstate_V1_Operation.OneOf_Kind, limits: Limits) throws(SharedStateError)
        -> WriteRequest.WriteOperation
    {
        switch operation {
        case .put(let put):
            try KeyRules.validateKey(put.key, limits: limits)
            do {
                try ValueRules.validateValue(put.value, limits: limits)
            } catch {
                throw SharedStateError(error.code, "key \"\(put.key)\": \(error.message)")
            }
            return .put(
                key: put.key,
                value: put.value,
                ifVersion: put.hasIfVersion ? put.ifVersion : nil,
                ephemeralSession: ephemeralSession(put.ephemeral)
            )
        case .delete(let delete):
            try KeyRules.validateKey(delete.key, limits: limits)
            return .delete(key: delete.key, ifVersion: delete.hasIfVersion ? delete.ifVersion : nil)
        }
    }

    private func transactionRequest(_ transaction: Sharedstate_V1_TransactionRequest, limits: Limits) throws(SharedStateError)
        -> WriteRequest
    {
        try RequestRules.validateTransactionSize(
            transaction.compares.count + transaction.onSuccess.count + transaction.onFailure.count,
            limits: limits
        )
        var compares: [WriteRequest.Compare] = []
        for compare in transaction.compares {
            try KeyRules.validateKey(compare.key, limits: limits)
            switch compare.target {
            case .version(let version): compares.append(.init(key: compare.key, target: .version(version)))
            case .value(let value): compares.append(.init(key: compare.key, target: .value(value)))
            case nil:
                throw SharedStateError(.invalidArgument, "compare on key \"\(compare.key)\" names neither a version nor a value")
            }
        }
        func operations(_ list: [Sharedstate_V1_Operation]) throws(SharedStateError) -> [WriteRequest.WriteOperation] {
            var result: [WriteRequest.WriteOperation] = []
            for operation in list {
                guard let kind = operation.kind else {
                    throw SharedStateError(.invalidArgument, "transaction operation names neither put nor delete")
                }
                result.append(try writeOperation(kind, limits: limits))
            }
            return result
        }
        return .transaction(
            compares: compares,
            onSuccess: try operations(transaction.onSuccess),
            onFailure: try operations(transaction.onFailure)
        )
    }

    // MARK: Access

    /// What this connection's user may do under the policy in force now.
    private var permissions: Permissions { accessCache.current }

    /// The keys a watch or list of this connection may show, judged by the policy in force when
    /// each change is delivered (so a reload revokes at once); nil when everything is readable.
    private func readFilter(_ access: Permissions) -> KeyFilter? {
        if access.isUnrestricted { return nil }
        let cache = accessCache
        let filter: KeyFilter = { key in cache.current.canRead(key) }
        return filter
    }

    private func requireRead(_ key: String, _ access: Permissions) throws(SharedStateError) {
        guard access.canRead(key) else { throw denied("read key \"\(key)\"") }
    }

    /// What ends a watch of `prefixes` after the access policy changed: one of them selecting no
    /// key the user may read any more (as ``requireSomeRead(under:_:)`` refuses a new watch).
    private func endingCheck(prefixes: [String]) -> (@Sendable () -> SharedStateError?)? {
        let cache = accessCache
        let who = self.who
        return {
            let access = cache.current
            for prefix in prefixes.isEmpty ? [""] : prefixes where !access.mayReadSome(under: prefix) {
                return Self.denied(who, Self.readingAnything(under: prefix))
            }
            return nil
        }
    }

    /// Fails when one of `prefixes` selects no key the user may read: a list or watch that could
    /// never show anything is refused, as etcd refuses a range it may not read, rather than
    /// answered with silence. A prefix the user may read in part is filtered instead.
    private func requireSomeRead(under prefixes: [String], _ access: Permissions) throws(SharedStateError) {
        for prefix in prefixes.isEmpty ? [""] : prefixes where !access.mayReadSome(under: prefix) {
            throw denied(Self.readingAnything(under: prefix))
        }
    }

    private func requireWrite(_ key: String, _ access: Permissions) throws(SharedStateError) {
        guard access.canWrite(key) else { throw denied("write key \"\(key)\"") }
    }

    private func requireAdministrator(_ action: String, _ access: Permissions) throws(SharedStateError) {
        guard access.isUnrestricted else { throw denied("\(action) (only syncd's own user and root may)") }
    }

    private func denied(_ action: String) -> SharedStateError {
        Self.denied(who, action)
    }

    /// Who this connection is, as a denial names it.
    private var who: String { record.credentials.map { "user \($0.uid)" } ?? "this client" }

    private static func denied(_ who: String, _ action: String) -> SharedStateError {
        SharedStateError(.permissionDenied, "permission denied: \(who) may not \(action)")
    }

    private static func readingAnything(under prefix: String) -> String {
        prefix.isEmpty ? "read any key" : "read any key under \"\(prefix)\""
    }

    /// The session to bind a put to: this one when it asks to be ephemeral, else none.
    private func ephemeralSession(_ isEphemeral: Bool) -> UInt64 {
        guard isEphemeral else { return 0 }
        hasWrittenEphemeral = true
        return record.sessionID
    }

    private func respond(_ id: UInt64, _ fill: (inout Sharedstate_V1_Response) -> Void) {
        writer.respond(Self.responseFrame(id, fill))
    }

    private static func responseFrame(_ id: UInt64, _ fill: (inout Sharedstate_V1_Response) -> Void) -> ByteBuffer {
        Frame.encode(
            Sharedstate_V1_ServerFrame.with {
                $0.response = .with {
                    $0.id = id
                    fill(&$0)
                }
            }
        )
    }

    private func send(_ frame: Sharedstate_V1_ServerFrame) {
        writer.respond(Frame.encode(frame))
    }
}

extension WriteRequest.WriteOperation {
    /// The operation as a request of its own.
    var request: WriteRequest {
        switch self {
        case .put(let key, let value, let ifVersion, let ephemeralSession):
            .put(key: key, value: value, ifVersion: ifVersion, ephemeralSession: ephemeralSession)
        case .delete(let key, let ifVersion): .delete(key: key, ifVersion: ifVersion)
        }
    }
}
