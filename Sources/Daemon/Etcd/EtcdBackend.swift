import EtcdClient
import Foundation
import Logging
import SharedStateWire
import SyncEngine
import Synchronization

/// The backend for several hosts: the state lives in an etcd cluster, and this syncd is one
/// host's caching, fanning-out member of it (a ``WriteForwarder``; see ``StateBackend``).
///
/// - Writes go to etcd one transaction each (``EtcdWrite``), a connection's in order; the writes
///   of several connections that arrive while one is on its way go together, as the nested
///   transactions of one, and share its revision (``EtcdGroupCommit``). Each is answered once its
///   revision has been reported, so a client reads its own writes and sees the event of
///   revision R before the answer that carries R.
/// - One etcd watch over the prefix, from the revision last reported, reports every change
///   whichever host made it, in etcd's revision order (``BackendReport``). When it breaks, it
///   resumes on the next endpoint from the revision after the last one reported; when etcd
///   compacted that revision meanwhile, the backend reads the prefix again and reports it whole.
/// - Replays and history come from the revisions reported since start (``RecentRevisions``);
///   older ones are `compacted`, and a client takes a snapshot instead.
/// - Each session with ephemeral keys has an etcd lease, kept alive here and revoked when the
///   session ends; if this host dies, the lease expires and every other host sees the keys go.
///
/// This file holds the watch and the reads; `+Writes` the writes, `+Leases` the leases.
package final class EtcdBackend: StateBackend, WriteForwarder {
    package struct Configuration: Sendable {
        package var endpoints: [EtcdEndpoint]
        package var space: EtcdKeySpace
        /// The TTL of a session's lease, in seconds: how long a dead host's ephemeral keys outlive it.
        package var leaseTTL: Int64 = 5
        /// The most revisions kept in memory for replays and history.
        package var retainedRevisions = 100_000
        /// Where the leases of this syncd's sessions are recorded, for the next syncd on this
        /// host to revoke; nil records them nowhere.
        package var ledger: LeaseLedger?

        /// A backend over the cluster at `endpoints` (`host:port`, tried in turn), keeping
        /// syncd's keys under `prefix`; it keeps at most 100,000 revisions in memory, fewer if
        /// `retainedRevisions` (`--retain-revisions`) says so.
        ///
        /// - Throws: `invalidArgument` naming an endpoint or a prefix that cannot be used.
        package init(endpoints: [String], prefix: String, leaseTTLSeconds: Int, retainedRevisions: UInt64) throws(SharedStateError) {
            do {
                self.endpoints = try endpoints.map { text throws(EtcdError) in try EtcdEndpoint(parsing: text) }
            } catch {
                throw SharedStateError(.invalidArgument, "etcd endpoint: \(error)")
            }
            space = try EtcdKeySpace(prefix: prefix)
            leaseTTL = Int64(leaseTTLSeconds)
            if retainedRevisions > 0 { self.retainedRevisions = Int(min(retainedRevisions, 100_000)) }
        }
    }

    /// What the backend knows of etcd, for `status`.
    struct ClusterView: Sendable {
        var endpoint: EtcdEndpoint
        var clusterRevision: UInt64 = 0
        /// Since when the watch has been broken, while it is.
        var staleSince: Date?
    }

    let client: EtcdClient
    /// Sends the writes of several sessions as one etcd transaction when they arrive together.
    let groupCommit: EtcdGroupCommit
    let configuration: Configuration
    let logger: Logger
    let cluster: Mutex<ClusterView>
    let recent: Mutex<RecentRevisions>
    let lanes = Mutex(WriteLanes())
    let leases = Mutex(SessionLeases())
    /// Held while the ledger is written, so the last write records the newest leases.
    let ledgerWrites = Mutex(())
    /// Told of a session whose lease expired (see ``whenASessionLosesItsLease(_:)``).
    let leaseLost = Mutex<(@Sendable (UInt64) -> Void)?>(nil)
    let reported = Mutex(ReportedRevision())
    private let stop = Mutex<(stopped: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))
    /// The client's connections, running from ``load()`` until ``run(reporting:)`` returns.
    private let connections = Mutex<Task<Void, Never>?>(nil)

    package var name: String { "etcd" }
    package var writes: BackendWrites { .forwarded(self) }
    var space: EtcdKeySpace { configuration.space }

    /// - Throws: ``EtcdError`` when an endpoint cannot be used.
    package init(configuration: Configuration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        self.client = try EtcdClient(endpoints: configuration.endpoints, logger: logger)
        self.groupCommit = EtcdGroupCommit(client: client)
        self.cluster = Mutex(ClusterView(endpoint: configuration.endpoints[0]))
        self.recent = Mutex(RecentRevisions(after: 0))
    }

    // MARK: Start

    /// Reads every entry under the prefix, at one revision; the engine starts from it. Replays
    /// from before that revision are `compacted`: this syncd has not seen them.
    ///
    /// Starts the client's connections, which run until ``run(reporting:)`` returns.
    package func load() async throws(SharedStateError) -> StartingState {
        connections.withLock { task in
            guard task == nil else { return }
            task = Task { [client, logger] in
                do { try await client.run() } catch { logger.error("the etcd client stopped", metadata: ["error": "\(error)"]) }
            }
        }
        await revokeLeasesOfPreviousRun()
        let snapshot = try await readSnapshot()
        recent.withLock { $0 = RecentRevisions(after: snapshot.revision) }
        reported.withLock { $0.revision = snapshot.revision }
        var table = EntryTable(capacity: snapshot.entries.count)
        for entry in snapshot.entries { table.insert(StoredEntry.make(entry)) }
        return StartingState(entries: table, revision: snapshot.revision, compactedRevision: snapshot.revision)
    }

    /// Every entry under the prefix at one revision, read in pages of 10,000.
    private func readSnapshot() async throws(SharedStateError) -> (entries: [Entry], revision: UInt64) {
        let range = space.range
        var entries: [Entry] = []
        var from = range.key
        var revision: Int64 = 0
        while true {
            let page: EtcdRange
            do {
                page = try await client.range(key: from, rangeEnd: range.end, revision: revision, limit: 10_000)
            } catch {
                throw Self.unavailable(error, doing: "read the state")
            }
            if revision == 0 { revision = page.revision }
            entries.append(contentsOf: page.entries.compactMap { space.entry($0, session: session(ofLease:)) })
            guard page.more, let last = page.entries.last else { break }
            from = last.key + [0]
        }
        return (entries, UInt64(revision))
    }

    // MARK: The watch

    package func run(reporting report: @escaping @Sendable (BackendReport) -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.follow(reporting: report) }
            group.addTask { await self.keepLeasesAlive() }
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let stopped = stop.withLock { stop in
                        if !stop.stopped { stop.waiter = continuation }
                        return stop.stopped
                    }
                    if stopped { continuation.resume() }
                }
            } onCancel: {
                shutDown()
            }
            // Writes taken before the shutdown are answered, and leases revoked, before the
            // watch that reports them stops; a write whose revision has not come back within
            // a few seconds (etcd gone) is answered anyway, since etcd committed it.
            let release = Task {
                try await Task.sleep(for: .seconds(3))
                for resume in self.reported.withLock({ $0.release() }) { resume() }
            }
            await waitForWrites()
            release.cancel()
            await revokeEveryLease()
            group.cancelAll()
        }
        client.shutDown()
        await connections.withLock { $0 }?.value
    }

    package func shutDown() {
        let waiter = stop.withLock { stop -> CheckedContinuation<Void, Never>? in
            stop.stopped = true
            defer { stop.waiter = nil }
            return stop.waiter
        }
        lanes.withLock { $0.close() }
        waiter?.resume()
    }

    /// Reports every change under the prefix, whichever host made it, until cancelled.
    private func follow(reporting report: @Sendable (BackendReport) -> Void) async {
        while !Task.isCancelled {
            let from = Int64(reported.withLock { $0.revision }) + 1
            let range = space.range
            do {
                for try await update in client.watch(key: range.key, rangeEnd: range.end, startRevision: from) {
                    switch update {
                    case .started(let endpoint):
                        let wasStale = cluster.withLock { view in
                            defer {
                                view.endpoint = endpoint
                                view.staleSince = nil
                            }
                            return view.staleSince != nil
                        }
                        if wasStale { logger.notice("following etcd again", metadata: ["endpoint": "\(endpoint)"]) }
                    case .events(let events, let revision):
                        cluster.withLock { $0.clusterRevision = max($0.clusterRevision, UInt64(revision)) }
                        self.report(space.revisions(of: events, session: session(ofLease:)), to: report)
                        // Every change under the prefix up to etcd's revision has come: writes
                        // outside the prefix move etcd's revision too.
                        reach(UInt64(revision), reporting: report)
                    case .progress(let revision):
                        cluster.withLock { $0.clusterRevision = max($0.clusterRevision, UInt64(revision)) }
                        reach(UInt64(revision), reporting: report)
                    case .interrupted(let reason):
                        markStale(because: reason)
                    }
                }
            } catch EtcdError.compacted(_, let compactedRevision) {
                logger.notice(
                    "etcd compacted the revisions this syncd had not seen; reading the state again",
                    metadata: ["from": "\(from)", "compacted": "\(compactedRevision)"])
                await readAgain(reporting: report)
            } catch {
                markStale(because: "\(error)")
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Reports revisions the watch saw, then answers the writes waiting for them.
    private func report(_ revisions: [CommittedRevision], to report: (BackendReport) -> Void) {
        guard let last = revisions.last?.revision else { return }
        // Held before they are reported: a replay through the engine's revision finds them.
        let trimmed = recent.withLock { recent -> UInt64? in
            let before = recent.compactedRevision
            recent.append(revisions)
            recent.keep(atMost: configuration.retainedRevisions)
            return recent.compactedRevision != before ? recent.compactedRevision : nil
        }
        report(.committed(revisions))
        if let trimmed {
            report(.forgotten(through: trimmed))
        }
        let answers = reported.withLock { $0.advance(to: last) }
        for answer in answers { answer() }
    }

    /// After a compaction took the revisions the watch needed: reads the prefix at the current
    /// revision and reports it, so the engine publishes what differs as one revision and every
    /// local watch ends at etcd's state with no gap; replays from before it are `compacted`.
    private func readAgain(reporting report: (BackendReport) -> Void) async {
        let snapshot: (entries: [Entry], revision: UInt64)
        do {
            snapshot = try await readSnapshot()
        } catch {
            markStale(because: error.message)
            try? await Task.sleep(for: .seconds(1))
            return
        }
        recent.withLock { $0.compact(through: snapshot.revision) }
        report(.readAgain(entries: snapshot.entries, revision: snapshot.revision))
        let answers = reported.withLock { $0.advance(to: snapshot.revision) }
        for answer in answers { answer() }
    }

    /// Reports that etcd reached `revision` with no change under the prefix, and answers the
    /// writes waiting for it.
    private func reach(_ revision: UInt64, reporting report: (BackendReport) -> Void) {
        report(.reached(revision))
        let answers = reported.withLock { $0.advance(to: revision) }
        for answer in answers { answer() }
    }

    private func markStale(because reason: String) {
        let isNew = cluster.withLock { view in
            defer { view.staleSince = view.staleSince ?? Date() }
            return view.staleSince == nil
        }
        if isNew {
            logger.warning("lost etcd; serving the last state it sent until it is back", metadata: ["reason": "\(reason)"])
        }
    }

    package var status: BackendStatus {
        let view = cluster.withLock { $0 }
        return BackendStatus(
            name: name, location: "\(view.endpoint)", sourceRevision: view.clusterRevision,
            staleSince: view.staleSince?.timeIntervalSince1970)
    }

    /// A linearizable read of `key` from etcd, at etcd's current revision.
    package func consistentEntry(_ key: String) async throws(SharedStateError) -> (entry: Entry?, revision: UInt64) {
        let range: EtcdRange
        do {
            range = try await client.range(key: space.etcdKey(key))
        } catch {
            throw Self.unavailable(error, doing: "read \"\(key)\"")
        }
        return (range.entries.first.flatMap { space.entry($0, session: session(ofLease:)) }, UInt64(range.revision))
    }

    // MARK: History

    package func changes(after revision: UInt64, through: UInt64) async throws(SharedStateError) -> [CommittedRevision] {
        guard let found = recent.withLock({ $0.revisions(after: revision, through: through) }) else {
            throw SharedStateError(.compacted, "revision \(revision) is older than the revisions this syncd holds")
        }
        return found
    }

    /// Found from the revisions held since start: a key none of them changed after `revision`
    /// has its `current` entry.
    package func entries(of keys: Set<String>, at revision: UInt64, current: [String: Entry?]) async throws(SharedStateError) -> [String:
        Entry?]
    {
        // Read after `current`: revisions are held before they are reported, so every revision
        // that `current` reflects is in it.
        let recent = recent.withLock { $0 }
        var found: [String: Entry?] = [:]
        for key in keys {
            if let entry = recent.entry(of: key, at: revision, current: current[key] ?? nil) {
                found[key] = entry
            }
        }
        return found
    }

    package func history(of key: String, limit: Int?) async throws(SharedStateError) -> [LoggedChange] {
        recent.withLock { $0.changes(of: key, limit: limit) }.map { change, revision in
            LoggedChange(change: change, writerSession: revision.writerSession, cause: revision.cause)
        }
    }

    /// Forgets the revisions held up to `revision`; etcd's own history is compacted by etcd
    /// (`--auto-compaction-retention`), for every host at once.
    package func compact(through revision: UInt64) async throws(SharedStateError) {
        recent.withLock { $0.compact(through: revision) }
    }

    package func backup(to path: String) async throws(SharedStateError) -> UInt64 {
        throw SharedStateError(.invalidArgument, "the state is in etcd: back it up with `etcdctl snapshot save`")
    }

    static func unavailable(_ error: EtcdError, doing what: String) -> SharedStateError {
        SharedStateError(.unavailable, "cannot \(what) in etcd: \(error)")
    }
}
