import EtcdClient
import Foundation
import Logging
import SharedStateWire
import Synchronization

/// The backend for several hosts: the state lives in an etcd cluster, and this syncd is one
/// host's caching, fanning-out member of it (see ``StateBackend``).
///
/// - Writes go to etcd one transaction each (``EtcdWrite``), a connection's in order; the writes
///   of several connections that arrive while one is on its way go together, as the nested
///   transactions of one, and share its revision (``EtcdGroupCommit``). Each is answered once the
///   engine has published its revision, so a client reads its own writes and sees the event of
///   revision R before the answer that carries R.
/// - One etcd watch over the prefix, from the revision the engine has published, feeds the
///   engine every change whichever host made it, in etcd's revision order. When it breaks, it
///   resumes on the next endpoint from the revision after the last one published; when etcd
///   compacted that revision meanwhile, the backend reads the prefix again and publishes the
///   difference as one revision.
/// - Replays and history come from the revisions published since start (``RecentRevisions``);
///   older ones are `compacted`, and a client takes a snapshot instead.
/// - Each session with ephemeral keys has an etcd lease, kept alive here and revoked when the
///   session ends; if this host dies, the lease expires and every other host sees the keys go.
///
/// This file holds the watch and the reads; `+Writes` the writes, `+Leases` the leases.
final class EtcdBackend: StateBackend {
    struct Configuration: Sendable {
        var endpoints: [EtcdEndpoint]
        var space: EtcdKeySpace
        /// The TTL of a session's lease, in seconds: how long a dead host's ephemeral keys outlive it.
        var leaseTTL: Int64 = 5
        /// The most revisions kept in memory for replays and history.
        var retainedRevisions = 100_000
        /// Where the leases of this syncd's sessions are recorded, for the next syncd on this
        /// host to revoke; nil records them nowhere.
        var ledger: LeaseLedger?

        /// The backend `etcd` configures; it keeps at most 100,000 revisions in memory, fewer
        /// if `retainedRevisions` (`--retain-revisions`) says so.
        init(_ etcd: BackendConfiguration.Etcd, retainedRevisions: UInt64) throws(SharedStateError) {
            do {
                endpoints = try etcd.endpoints.map { text throws(EtcdError) in try EtcdEndpoint(parsing: text) }
            } catch {
                throw SharedStateError(.invalidArgument, "etcd endpoint: \(error)")
            }
            space = try EtcdKeySpace(prefix: etcd.prefix)
            leaseTTL = Int64(etcd.leaseTTLSeconds)
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
    let writes = Mutex(WriteLanes())
    let leases = Mutex(SessionLeases())
    /// Held while the ledger is written, so the last write records the newest leases.
    let ledgerWrites = Mutex(())
    /// Told of a session whose lease expired (see ``whenASessionLosesItsLease(_:)``).
    let leaseLost = Mutex<(@Sendable (UInt64) -> Void)?>(nil)
    let published = Mutex(PublishedRevision())
    private let stop = Mutex<(stopped: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))
    /// The client's connections, running from ``load()`` until ``run(publishingTo:)`` returns.
    private let connections = Mutex<Task<Void, Never>?>(nil)
    /// The engine this backend publishes to, while it runs.
    private let replica = Mutex<StateEngine?>(nil)

    var name: String { "etcd" }
    var space: EtcdKeySpace { configuration.space }

    /// - Throws: ``EtcdError`` when an endpoint cannot be used.
    init(configuration: Configuration, logger: Logger) throws {
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
    /// Starts the client's connections, which run until ``run(publishingTo:)`` returns.
    func load() async throws(SharedStateError) -> StartingState {
        connections.withLock { task in
            guard task == nil else { return }
            task = Task { [client, logger] in
                do { try await client.run() } catch { logger.error("the etcd client stopped", metadata: ["error": "\(error)"]) }
            }
        }
        await revokeLeasesOfPreviousRun()
        let snapshot = try await readSnapshot()
        recent.withLock { $0 = RecentRevisions(after: snapshot.revision) }
        published.withLock { $0.revision = snapshot.revision }
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

    func run(publishingTo engine: StateEngine) async {
        replica.withLock { $0 = engine }
        defer { replica.withLock { $0 = nil } }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.follow(publishingTo: engine) }
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
            // watch that publishes them stops; a write whose revision has not come back within
            // a few seconds (etcd gone) is answered anyway, since etcd committed it.
            let release = Task {
                try await Task.sleep(for: .seconds(3))
                for resume in self.published.withLock({ $0.release() }) { resume() }
            }
            await waitForWrites()
            release.cancel()
            await revokeEveryLease()
            group.cancelAll()
        }
        client.shutDown()
        await connections.withLock { $0 }?.value
    }

    func shutDown() {
        let waiter = stop.withLock { stop -> CheckedContinuation<Void, Never>? in
            stop.stopped = true
            defer { stop.waiter = nil }
            return stop.waiter
        }
        writes.withLock { $0.close() }
        waiter?.resume()
    }

    /// Publishes every change under the prefix, whichever host made it, until cancelled.
    private func follow(publishingTo engine: StateEngine) async {
        while !Task.isCancelled {
            let from = Int64(published.withLock { $0.revision }) + 1
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
                        publish(space.revisions(of: events, session: session(ofLease:)), to: engine)
                        // Every change under the prefix up to etcd's revision has come: writes
                        // outside the prefix move etcd's revision too.
                        advance(engine, to: UInt64(revision))
                    case .progress(let revision):
                        cluster.withLock { $0.clusterRevision = max($0.clusterRevision, UInt64(revision)) }
                        advance(engine, to: UInt64(revision))
                    case .interrupted(let reason):
                        markStale(because: reason)
                    }
                }
            } catch EtcdError.compacted(_, let compactedRevision) {
                logger.notice(
                    "etcd compacted the revisions this syncd had not seen; reading the state again",
                    metadata: ["from": "\(from)", "compacted": "\(compactedRevision)"])
                await catchUpFromSnapshot(publishingTo: engine)
            } catch {
                markStale(because: "\(error)")
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Publishes revisions the watch reported, then answers the writes waiting for them.
    private func publish(_ revisions: [CommittedRevision], to engine: StateEngine) {
        guard let last = revisions.last?.revision else { return }
        // Held before they are published: a replay through the engine's revision finds them.
        let trimmed = recent.withLock { recent -> UInt64? in
            let before = recent.compactedRevision
            recent.append(revisions)
            recent.keep(atMost: configuration.retainedRevisions)
            return recent.compactedRevision != before ? recent.compactedRevision : nil
        }
        engine.publish(revisions)
        if let trimmed {
            engine.historyForgotten(through: trimmed)
        }
        let answers = published.withLock { $0.advance(to: last) }
        for answer in answers { answer() }
    }

    /// After a compaction took the revisions the watch needed: reads the prefix at the current
    /// revision and publishes what differs from the engine's entries as one revision, so every
    /// local watch ends at etcd's state with no gap; replays from before it are `compacted`.
    private func catchUpFromSnapshot(publishingTo engine: StateEngine) async {
        let snapshot: (entries: [Entry], revision: UInt64)
        do {
            snapshot = try await readSnapshot()
        } catch {
            markStale(because: error.message)
            try? await Task.sleep(for: .seconds(1))
            return
        }
        // Only this loop publishes, so the entries cannot change until the difference is published.
        let current = engine.allEntries()
        let changes = EtcdKeySpace.differences(from: current, to: snapshot.entries, revision: snapshot.revision)
        if changes.isEmpty {
            advance(engine, to: snapshot.revision)
        } else {
            publish(
                [CommittedRevision(revision: snapshot.revision, changes: changes, origin: .syncd("read again after etcd compacted"))],
                to: engine)
        }
        // After the revision is published: the compacted revision never passes the current one.
        recent.withLock { $0.compact(through: snapshot.revision) }
        engine.historyForgotten(through: snapshot.revision)
    }

    /// Moves the engine's revision up to `revision`, which changed nothing under the prefix, and
    /// answers the writes waiting for it.
    private func advance(_ engine: StateEngine, to revision: UInt64) {
        engine.advance(to: revision)
        let answers = published.withLock { $0.advance(to: revision) }
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

    var status: BackendStatus {
        let view = cluster.withLock { $0 }
        return BackendStatus(
            name: name, location: "\(view.endpoint)", sourceRevision: view.clusterRevision,
            staleSince: view.staleSince?.timeIntervalSince1970)
    }

    /// A linearizable read of `key` from etcd, at etcd's current revision.
    func consistentEntry(_ key: String, in engine: StateEngine) async throws(SharedStateError) -> (entry: Entry?, revision: UInt64) {
        let range: EtcdRange
        do {
            range = try await client.range(key: space.etcdKey(key))
        } catch {
            throw Self.unavailable(error, doing: "read \"\(key)\"")
        }
        return (range.entries.first.flatMap { space.entry($0, session: session(ofLease:)) }, UInt64(range.revision))
    }

    // MARK: History

    func changes(after revision: UInt64, through: UInt64) async throws(SharedStateError) -> [CommittedRevision] {
        guard let found = recent.withLock({ $0.revisions(after: revision, through: through) }) else {
            throw SharedStateError(.compacted, "revision \(revision) is older than the revisions this syncd holds")
        }
        return found
    }

    func entries(of keys: Set<String>, at revision: UInt64) async throws(SharedStateError) -> [String: Entry?] {
        guard let engine = replica.withLock({ $0 }) else { return [:] }
        // Under the engine's lock: no revision is published meanwhile, and every published one
        // is held (they are held first).
        return engine.published.withLock { state in
            let recent = recent.withLock { $0 }
            var found: [String: Entry?] = [:]
            for key in keys {
                if let entry = recent.entry(of: key, at: revision, current: state.entries[key]?.entry(key: key)) {
                    found[key] = entry
                }
            }
            return found
        }
    }

    func history(of key: String, limit: Int?) async throws(SharedStateError) -> [LoggedChange] {
        recent.withLock { $0.changes(of: key, limit: limit) }.map { change, revision in
            LoggedChange(change: change, writerSession: revision.writerSession, cause: revision.cause)
        }
    }

    /// Forgets the revisions held up to `revision`; etcd's own history is compacted by etcd
    /// (`--auto-compaction-retention`), for every host at once.
    func compact(through revision: UInt64) async throws(SharedStateError) {
        recent.withLock { $0.compact(through: revision) }
    }

    func backup(to path: String) async throws(SharedStateError) -> UInt64 {
        throw SharedStateError(.invalidArgument, "the state is in etcd: back it up with `etcdctl snapshot save`")
    }

    static func unavailable(_ error: EtcdError, doing what: String) -> SharedStateError {
        SharedStateError(.unavailable, "cannot \(what) in etcd: \(error)")
    }
}
