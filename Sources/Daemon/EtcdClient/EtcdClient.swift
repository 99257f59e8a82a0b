import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2Posix
import Logging
import NIOCore
import Synchronization

/// A client of an etcd v3 cluster over gRPC, with failover between the cluster's endpoints.
///
/// ```swift
/// let etcd = try EtcdClient(endpoints: EtcdEndpoint.list(parsing: "http://127.0.0.1:2379,http://127.0.0.1:22379"))
/// try await withThrowingDiscardingTaskGroup { group in
///     group.addTask { try await etcd.run() }
///     let outcome = try await etcd.transaction(EtcdTransaction(success: [.put(key: Data("a".utf8), value: Data("1".utf8))]))
///     etcd.shutDown()
/// }
/// ```
///
/// Calls go to one endpoint at a time, the *current* one. When it fails (it cannot be reached, or
/// it has lost its leader), the client moves to the next endpoint and carries on, as etcd's own
/// clients do: reads, leases and status are tried again there at once, and watches resume there
/// from the revision they had reached. A write whose request may already have reached the failed
/// endpoint is not sent again: it fails with ``EtcdError/unavailable(_:outcomeUnknown:)``, since
/// sending it twice could apply it twice.
public final class EtcdClient: Sendable {
    /// The endpoints, in the order failover tries them.
    public let endpoints: [EtcdEndpoint]
    private let clients: [GRPCClient<HTTP2ClientTransport.Posix>]
    private let current = Mutex(0)
    private let logger: Logger
    /// How long one call may take before it counts as a failure of its endpoint.
    let callTimeout: Duration
    /// How long a watch's endpoint may stay silent, though asked for progress, before the watch
    /// takes it as failed and moves to the next.
    let watchSilenceLimit: Duration

    /// Creates a client; nothing connects before ``run()`` runs and a call is made.
    ///
    /// - Parameter callTimeout: How long a unary call waits for its endpoint before trying the
    ///   next one. etcd answers within its election timeout (1 s by default) even without a leader,
    ///   but a write waits for the quorum's disks; etcdctl waits 5 s too.
    /// - Parameter watchSilenceLimit: How long a watch's endpoint may leave a request for
    ///   progress unanswered before the watch moves to the next one.
    public init(
        endpoints: [EtcdEndpoint], callTimeout: Duration = .seconds(5), watchSilenceLimit: Duration = .seconds(3),
        logger: Logger = Logger(label: "etcd")
    ) throws {
        precondition(!endpoints.isEmpty, "an etcd client needs at least one endpoint")
        self.endpoints = endpoints
        self.callTimeout = callTimeout
        self.watchSilenceLimit = watchSilenceLimit
        self.logger = logger
        var config = HTTP2ClientTransport.Posix.Config.defaults
        // A member that stops answering is noticed within seconds, not at the next TCP timeout.
        // etcd closes a connection that pings more often than every 5 s, or pings with no call
        // open (its --grpc-keepalive-min-time and gRPC's enforcement policy).
        config.connection.keepalive = .init(time: .seconds(10), timeout: .seconds(5), allowWithoutCalls: false)
        config.backoff = .init(initial: .milliseconds(100), max: .seconds(1), multiplier: 1.6, jitter: 0.2)
        config.channelDebuggingCallbacks.onCreateTCPConnection = { channel in
            channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(PingAnswering(), position: .first) }
        }
        clients = try endpoints.map { endpoint in
            GRPCClient(
                transport: try HTTP2ClientTransport.Posix(
                    target: .ipv4(address: endpoint.host, port: endpoint.port), transportSecurity: .plaintext, config: config))
        }
    }

    /// Runs the connections to every endpoint until ``shutDown()``; calls need it running.
    public func run() async throws {
        try await withThrowingDiscardingTaskGroup { group in
            for client in clients {
                group.addTask { try await client.runConnections() }
            }
        }
    }

    /// Closes the connections once the calls in flight have finished; ``run()`` then returns.
    public func shutDown() {
        for client in clients { client.beginGracefulShutdown() }
    }

    /// The endpoint calls go to now.
    public var currentEndpoint: EtcdEndpoint { endpoints[currentIndex] }

    var currentIndex: Int { current.withLock { $0 } }

    func client(at index: Int) -> GRPCClient<HTTP2ClientTransport.Posix> { clients[index] }

    // MARK: Key-value

    /// The entries of `key`, or with `rangeEnd` of every key in `[key, rangeEnd)`, in key order.
    ///
    /// - Parameters:
    ///   - revision: Read the state as it was at this revision; 0 for the latest.
    ///   - limit: At most this many entries; 0 for no limit.
    ///   - serializable: Answer from the endpoint's own state, without asking the leader: faster,
    ///     and possible without a leader, but it may be behind the cluster.
    public func range(
        key: Data, rangeEnd: Data? = nil, revision: Int64 = 0, limit: Int64 = 0, serializable: Bool = false
    ) async throws(EtcdError) -> EtcdRange {
        let request = Etcdserverpb_RangeRequest.with {
            $0.key = key
            if let rangeEnd { $0.rangeEnd = rangeEnd }
            $0.revision = revision
            $0.limit = limit
            $0.serializable = serializable
        }
        let response = try await call(isWrite: false) { client, options in
            try await Etcdserverpb_KV.Client(wrapping: client).range(request, options: options)
        }
        return EtcdRange(
            entries: response.kvs.map(EtcdKeyValue.init), revision: response.header.revision, more: response.more,
            count: response.count)
    }

    /// Runs `transaction`: one revision for all its writes, decided by the cluster's leader.
    public func transaction(_ transaction: EtcdTransaction) async throws(EtcdError) -> EtcdTransaction.Outcome {
        let request = transaction.wireValue
        let response = try await call(isWrite: true) { client, options in
            try await Etcdserverpb_KV.Client(wrapping: client).txn(request, options: options)
        }
        return EtcdTransaction.Outcome(response)
    }

    /// Forgets the history before `revision`; with `physical`, returns once the space is freed.
    public func compact(revision: Int64, physical: Bool = false) async throws(EtcdError) {
        let request = Etcdserverpb_CompactionRequest.with {
            $0.revision = revision
            $0.physical = physical
        }
        _ = try await call(isWrite: true) { client, options in
            try await Etcdserverpb_KV.Client(wrapping: client).compact(request, options: options)
        }
    }

    // MARK: Leases

    /// Grants a lease that expires `ttl` seconds after its last keep-alive; returns its id.
    public func grantLease(ttl: Int64) async throws(EtcdError) -> Int64 {
        let request = Etcdserverpb_LeaseGrantRequest.with { $0.ttl = ttl }
        let response = try await call(isWrite: false) { client, options in
            try await Etcdserverpb_Lease.Client(wrapping: client).leaseGrant(request, options: options)
        }
        if !response.error.isEmpty { throw .refused(code: "lease grant", message: response.error) }
        return response.id
    }

    /// Revokes a lease: the keys bound to it are deleted, at one revision. A lease that no
    /// longer exists is not an error.
    public func revokeLease(_ id: Int64) async throws(EtcdError) {
        let request = Etcdserverpb_LeaseRevokeRequest.with { $0.id = id }
        do {
            _ = try await call(isWrite: false) { client, options in
                try await Etcdserverpb_Lease.Client(wrapping: client).leaseRevoke(request, options: options)
            }
        } catch .refused(_, let message) where message.contains("lease not found") {
            return
        }
    }

    /// Renews the leases `ids`; returns the TTL each has left, 0 for one that has expired.
    public func keepAlive(_ ids: [Int64]) async throws(EtcdError) -> [Int64: Int64] {
        guard !ids.isEmpty else { return [:] }
        return try await call(isWrite: false) { client, options in
            try await Etcdserverpb_Lease.Client(wrapping: client).leaseKeepAlive(
                options: options,
                requestProducer: { writer in
                    for id in ids { try await writer.write(.with { $0.id = id }) }
                },
                onResponse: { response in
                    var remaining: [Int64: Int64] = [:]
                    for try await answer in response.messages {
                        remaining[answer.id] = answer.ttl
                        if remaining.count == Set(ids).count { break }
                    }
                    return remaining
                })
        }
    }

    // MARK: Cluster

    /// The state of the current endpoint's member, and of the cluster as it sees it.
    public func status() async throws(EtcdError) -> EtcdStatus {
        let (response, endpoint) = try await call(isWrite: false) { client, options, endpoint in
            (try await Etcdserverpb_Maintenance.Client(wrapping: client).status(.init(), options: options), endpoint)
        }
        return EtcdStatus(
            endpoint: endpoint, memberID: response.header.memberID, leaderID: response.leader,
            revision: response.header.revision, raftTerm: response.raftTerm, version: response.version)
    }

    // MARK: Calls with failover

    func call<Result: Sendable>(
        isWrite: Bool,
        _ body: @Sendable (GRPCClient<HTTP2ClientTransport.Posix>, CallOptions) async throws -> Result
    ) async throws(EtcdError) -> Result {
        try await call(isWrite: isWrite) { client, options, _ in try await body(client, options) }
    }

    /// Runs `body` on the current endpoint; when that endpoint fails, moves to the next and, unless
    /// the request may have been applied already, runs it there; up to once per endpoint.
    func call<Result: Sendable>(
        isWrite: Bool,
        _ body: @Sendable (GRPCClient<HTTP2ClientTransport.Posix>, CallOptions, EtcdEndpoint) async throws -> Result
    ) async throws(EtcdError) -> Result {
        var options = CallOptions.defaults
        options.timeout = callTimeout
        var lastFailure = ""
        for _ in endpoints.indices {
            let index = current.withLock { $0 }
            do {
                return try await body(clients[index], options, endpoints[index])
            } catch let error as RPCError {
                let failure = Self.classify(error)
                switch failure {
                case .request(let refusal):
                    throw refusal
                case .endpoint(let message, let requestSent):
                    lastFailure = "\(endpoints[index]): \(message)"
                    moveOn(from: index, because: message)
                    if isWrite, requestSent { throw .unavailable(lastFailure, outcomeUnknown: true) }
                }
            } catch {
                throw .unavailable("\(endpoints[index]): \(error)", outcomeUnknown: isWrite)
            }
        }
        throw .unavailable("no endpoint answered; last: \(lastFailure)", outcomeUnknown: false)
    }

    /// Makes the endpoint after `index` the current one, unless another call already moved on.
    func moveOn(from index: Int, because reason: String) {
        let next = current.withLock { current -> Int? in
            guard current == index else { return nil }
            current = (index + 1) % endpoints.count
            return current
        }
        if let next {
            logger.warning(
                "etcd endpoint failed; moving to the next",
                metadata: ["failed": "\(endpoints[index])", "next": "\(endpoints[next])", "reason": "\(reason)"])
        }
    }

    enum Failure {
        /// The endpoint failed the call: try another. `requestSent`: it may have been applied.
        case endpoint(String, requestSent: Bool)
        /// etcd refused the request itself: another endpoint would too.
        case request(EtcdError)
    }

    static func classify(_ error: RPCError) -> Failure {
        switch error.code {
        case .unavailable, .deadlineExceeded, .aborted, .unknown, .internalError, .cancelled:
            // gRPC fails a call it could not even start with these messages: the channel had no
            // connection to send it on.
            // etcd refuses a write it cannot propose for want of a leader before it proposes it.
            let neverSent = [
                "transient failure", "isn't ready", "no subchannel", "subchannel is unavailable", "etcdserver: no leader",
                "etcdserver: not capable",
            ].contains {
                error.message.contains($0)
            }
            return .endpoint(error.message, requestSent: !neverSent)
        case .outOfRange where error.message.contains("compacted"):
            return .request(.compacted(requested: 0, compactedRevision: 0))
        default:
            return .request(.refused(code: "\(error.code)", message: error.message))
        }
    }
}

/// What ``EtcdClient/range(key:rangeEnd:revision:limit:serializable:)`` read.
public struct EtcdRange: Sendable, Equatable {
    public var entries: [EtcdKeyValue]
    /// The revision the entries were read at.
    public var revision: Int64
    /// Whether a limit left entries out.
    public var more: Bool
    /// How many keys the range holds, limit or not.
    public var count: Int64
}

/// A member's view of the cluster (etcd's maintenance status).
public struct EtcdStatus: Sendable, Equatable {
    /// The endpoint that answered.
    public var endpoint: EtcdEndpoint
    public var memberID: UInt64
    /// The leader's member id; 0 when the member knows of none.
    public var leaderID: UInt64
    /// The cluster's revision as the member has applied it.
    public var revision: Int64
    public var raftTerm: UInt64
    /// etcd's version, such as "3.4.23".
    public var version: String
}
