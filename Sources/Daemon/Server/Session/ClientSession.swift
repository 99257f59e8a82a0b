import Foundation
import Logging
import NIOCore
import NIOPosix
import SharedStateWire
import SyncEngine

/// The protocol logic of one client connection: the handshake, then each request checked and
/// handed to the engine. Reads are answered at once; writes are answered when they commit.
///
/// It does no I/O of its own: frames come in through ``receive(_:)`` and go out through the
/// connection's writer. This file holds the handshake and the dispatch of requests; each
/// operation is a file of its own under `Requests/` (see ``ClientRequest``), and `+Access` and
/// `+Writes` hold the checks several share.
///
/// It lives on its connection's event loop, which hands it one frame at a time; a request that
/// has to wait (a replay, a backup, reading the history) returns a ``Suspension`` for the caller
/// to run, and nothing else is handed in until it has finished.
package final class ClientSession {
    /// What the connection should do after a frame.
    package enum Step {
        case next
        /// Send this error as the last frame and close.
        case close(SharedStateError)
        /// Run this request's work off the event loop, then ``finish(_:with:)`` it; read no more
        /// frames meanwhile, so requests keep their order.
        case suspend(Suspension)
    }

    /// A request whose answer needs waiting for.
    package struct Suspension: Sendable {
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
        /// Every connection of the server, for `status`, `clients` and the metrics.
        var connections: ConnectionRegistry
        /// When the server started, for the uptime `status` shows.
        var startTime: ContinuousClock.Instant
        /// Reads the entries of a backup file, for `restore`.
        var readBackup: @Sendable (String) throws(SharedStateError) -> [Entry]
    }

    /// Who the peer is, for `clients`, status and logs.
    let record: ClientRecord
    private var hasGreeted = false
    /// Whether this session ever asked for an ephemeral key (then its end must clean up).
    var hasWrittenEphemeral = false
    var writer: ConnectionWriter { record.writer }
    let engine: StateEngine
    let settings: RuntimeSettings
    let environment: Environment
    let transfers: TransferStore
    let accessCache: PermissionCache
    /// Writes checked and not yet handed to the engine: they go together, once per read, with
    /// the other writes of the event loop's turn.
    private(set) var queuedWrites: [PendingWrite] = []
    /// This connection as the writer of the revisions it makes; made at its first write, after
    /// the Hello has named it.
    lazy var writerIdentity = WriterIdentity(
        session: record.sessionID,
        clientName: record.clientName,
        pid: record.credentials?.pid ?? 0,
        uid: record.credentials?.uid ?? 0,
        gid: record.credentials?.gid ?? 0
    )
    var logger: Logger { environment.logger }

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
        // Most frames are puts: read by hand, the rest through SwiftProtobuf.
        if hasGreeted, let put = DecodedPut(frame: payload) {
            return serve(put.requestID) { call throws(SharedStateError) in try put.serve(in: self, as: call) }
        }
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

    /// Hands the writes checked since the last call to the engine: with the other writes its
    /// event loop reads this turn when `turn` is given (see ``TurnWrites``), else at once, as
    /// one group.
    func submitQueuedWrites(joining turn: TurnWrites? = nil) {
        guard !queuedWrites.isEmpty else { return }
        writer.expectAnswers(queuedWrites.count)
        if engine.metrics.samplesDelivery() { queuedWrites[0].timedSince = .now }
        if let turn {
            turn.add(&queuedWrites)
        } else {
            engine.submit(queuedWrites, mayCommitHere: true)
            queuedWrites.removeAll(keepingCapacity: true)
        }
    }

    /// Queues a checked write, request `requestID` of this connection, made for `cause`.
    func queue(_ request: WriteRequest, requestID: UInt64, cause: String) {
        queuedWrites.append(
            PendingWrite(request: request, origin: WriteOrigin(writer: writerIdentity, cause: cause), answering: requestID, to: writer))
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
        // The registry's admission says which place it took; without one, it is a client.
        if record.admission == .waitingForHello { record.admission = .client }
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

    /// What handling one request needs: its id, and the limits and the user's permissions as they
    /// stand when it arrives.
    package struct Call {
        let id: UInt64
        let limits: Limits
        let access: Permissions
    }

    private func handle(_ request: Sharedstate_V1_Request) -> Step {
        serve(request.id) { call throws(SharedStateError) in
            // Each operation's message serves it (ClientSession+Dispatch.swift, generated).
            guard let operation = request.operation?.clientRequest else {
                throw SharedStateError(.invalidArgument, "request \(call.id) names no operation")
            }
            return try operation.serve(in: self, as: call)
        }
    }

    /// Runs request `id`'s operation; a failure is counted and answered.
    private func serve(_ id: UInt64, _ operation: (Call) throws(SharedStateError) -> Step) -> Step {
        let call = Call(id: id, limits: settings.limits, access: permissions)
        do throws(SharedStateError) {
            return try operation(call)
        } catch {
            engine.metrics.countError(error.code)
            respond(call.id) { $0.error = error.wireValue }
            return .next
        }
    }

    /// A request answered off the event loop: `work` runs as a ``Suspension``, its result is the
    /// response (nil when the work answered by itself).
    func suspend(
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

    /// Answers request `id` on the event loop, behind anything the connection still has to send.
    func respond(_ id: UInt64, _ fill: (inout Sharedstate_V1_Response) -> Void) {
        writer.respond(Self.responseFrame(id, fill))
    }

    /// The frame answering request `id`.
    static func responseFrame(_ id: UInt64, _ fill: (inout Sharedstate_V1_Response) -> Void) -> ByteBuffer {
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
