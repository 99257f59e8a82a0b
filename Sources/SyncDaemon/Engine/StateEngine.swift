import Foundation
import Logging
import NIOCore
import NIOPosix
import SharedStateWire
import Synchronization

/// The single writer of the shared state: sequences every write, group-commits them to storage,
/// then publishes them to readers and watchers.
///
/// Writes arrive through ``submit(_:completion:)`` from any connection and wait in a queue. The
/// writer (``runWriter()``) takes everything queued, plans each request in order against the state as
/// the earlier ones left it (each request that changes something gets the next revision), commits
/// them all in one SQLite transaction, and only then applies them to the in-memory state, fans them
/// out to watchers and acknowledges them. Reads and watch registration see only committed state.
final class StateEngine: Sendable {
    /// Tunables of the engine.
    struct Configuration: Sendable {
        /// The most write requests one SQLite transaction takes.
        var maxRequestsPerCommit = 1024
        /// How many revisions the change log keeps; older ones are compacted. 0 keeps any number.
        var retainedRevisions: UInt64 = 1_000_000
        /// How long the change log keeps a revision; nil keeps any age.
        var retainedDuration: Duration?
        /// How often idle watches get a progress notice (and retention is checked).
        var progressInterval: Duration = .seconds(5)
        /// The most entries a list, snapshot or resync reads under the engine's lock, on the
        /// caller's event loop. A larger one is read from a copy of the key order (see
        /// ``KeyOrder``) on NIO's thread pool, so neither the writer nor a loop waits for it.
        var entriesReadInPlace = 1_000
    }

    /// Ends the watches a new access policy leaves nothing to read (see
    /// ``WatchRegistry/endWatchesThatMayNotGoOn(revision:)``); returns how many.
    @discardableResult
    func endWatchesThatMayNotGoOn() -> Int {
        published.withLock { $0.watches.endWatchesThatMayNotGoOn(revision: $0.revision) }
    }

    /// Counts for `status`.
    struct Statistics: Sendable {
        var revision: UInt64
        var keys: Int
        var watches: Int
        var compactedRevision: UInt64
    }

    /// What readers and watchers see: the committed state.
    private struct Published {
        var entries: EntryTable
        var revision: UInt64
        var compactedRevision: UInt64
        var watches = WatchRegistry()
        /// The keys bound to each session, so ending one does not scan every key.
        var ephemeralKeys: [UInt64: Set<String>] = [:]

        /// Sets `key` to `entry` (nil: deleted), keeping ``ephemeralKeys`` in step.
        mutating func set(_ key: String, to entry: StoredEntry?) {
            let replaced = entries.set(key, to: entry)
            if let previous = replaced?.ephemeralSession, previous != 0 {
                ephemeralKeys[previous]?.remove(key)
                if ephemeralKeys[previous]?.isEmpty == true { ephemeralKeys[previous] = nil }
            }
            if let session = entry?.ephemeralSession, session != 0 {
                ephemeralKeys[session, default: []].insert(key)
            }
        }
    }

    private let storage: Storage
    private let configuration: Configuration
    private let logger: Logger
    private let published: Mutex<Published>
    private let queue = WriteQueue()
    private let retention: Mutex<RetentionPolicy>

    /// Creates an engine over `storage`, starting from the state it holds.
    init(storage: Storage, configuration: Configuration = Configuration(), logger: Logger) throws {
        precondition(configuration.progressInterval > .zero, "the progress interval must be positive")
        let loaded = try storage.load()
        self.storage = storage
        self.configuration = configuration
        self.retention = Mutex(RetentionPolicy(maxRevisions: configuration.retainedRevisions, maxAge: configuration.retainedDuration))
        self.logger = logger
        var published = Published(entries: loaded.entries, revision: loaded.revision, compactedRevision: loaded.compactedRevision)
        for entry in loaded.entries.all where entry.ephemeralSession != 0 {
            published.ephemeralKeys[entry.ephemeralSession, default: []].insert(entry.key)
        }
        self.published = Mutex(published)
    }

    /// How often idle watches get a progress notice.
    var progressInterval: Duration { configuration.progressInterval }

    // MARK: Reads

    /// The current revision.
    var revision: UInt64 { published.withLock { $0.revision } }

    /// The entry of `key`, if it exists, and the revision it was read at.
    func entry(_ key: String) -> (entry: Entry?, revision: UInt64) {
        published.withLock { ($0.entries[key]?.entry(key: key), $0.revision) }
    }

    /// The result of ``list(prefix:limit:readable:)``.
    struct Listing: Sendable {
        var entries: [Entry]
        var revision: UInt64
        var hasMore: Bool
    }

    /// What ``list(prefix:limit:readable:)`` found.
    enum ListOutcome: Sendable {
        case listed(Listing)
        /// More entries than may be read under the lock: read them with ``LargeListing/read()``,
        /// off the event loop.
        case tooLarge(LargeListing)
    }

    /// A list too large to read on the event loop: ``read()`` reads it from a copy of the key
    /// order taken when it was asked for, at the revision of that moment.
    struct LargeListing: Sendable {
        fileprivate let order: KeyOrder
        fileprivate let revision: UInt64
        fileprivate let prefix: String
        fileprivate let limit: Int?
        fileprivate let readable: KeyFilter?

        /// Reads the entries: it takes time, so call it off the event loop (as its encoding).
        func read() -> Listing {
            StateEngine.listing(in: order, prefix: prefix, limit: limit, readable: readable, revision: revision)
        }
    }

    /// The entries whose keys start with `prefix`, in key order, at most `limit` of them; or,
    /// when there are more than ``Configuration/entriesReadInPlace``, a ``LargeListing`` to read
    /// elsewhere.
    func list(prefix: String, limit: Int?, readable: KeyFilter? = nil) -> ListOutcome {
        let budget = configuration.entriesReadInPlace
        return published.withLock { state in
            if let limit, limit <= budget {
                let listing = Self.listing(
                    in: state.entries.order, prefix: prefix, limit: limit, readable: readable, revision: state.revision)
                return .listed(listing)
            }
            let found = state.entries.entries(withPrefix: prefix, limit: budget + 1, where: readable)
            if found.count <= budget {
                let entries = found.prefix(limit ?? found.count).map { $0.entry() }
                return .listed(Listing(entries: entries, revision: state.revision, hasMore: found.count > entries.count))
            }
            let large = LargeListing(
                order: state.entries.order, revision: state.revision, prefix: prefix, limit: limit, readable: readable)
            return .tooLarge(large)
        }
    }

    private static func listing(in order: KeyOrder, prefix: String, limit: Int?, readable: KeyFilter?, revision: UInt64) -> Listing {
        // One more than asked for tells whether there is more.
        var entries = entries(in: order, selectedBy: [prefix], readable: readable, limit: limit.map { $0 + 1 })
        let hasMore = limit.map { entries.count > $0 } ?? false
        if let limit, hasMore { entries.removeSubrange(limit...) }
        return Listing(entries: entries, revision: revision, hasMore: hasMore)
    }

    /// Counts for `status`.
    var statistics: Statistics {
        published.withLock {
            Statistics(
                revision: $0.revision,
                keys: $0.entries.count,
                watches: $0.watches.count,
                compactedRevision: $0.compactedRevision
            )
        }
    }

    // MARK: Writes

    /// Queues a write; `completion` is called on the writer's thread once it is committed, or has
    /// failed.
    func submit(_ request: WriteRequest, completion: @escaping @Sendable (Result<WriteOutcome, SharedStateError>) -> Void) {
        if !queue.enqueue(CollectionOfOne(WriteQueue.Pending(request: request, reply: .callback(completion)))) {
            completion(.failure(Self.shuttingDown))
        }
    }

    /// Queues a connection's writes, in order; `target` gets their answers, those of one commit
    /// together, once they are committed or have failed.
    ///
    /// - Parameter mayCommitHere: Whether the caller would rather commit on its own thread than
    ///   hand over, when nothing else is queued: a client waiting for one write at a time saves
    ///   the two thread wake-ups of the hand-off. A client with writes in flight is better served
    ///   by the writer, while the caller goes on reading. Never with `--durability full`.
    func submit(
        _ requests: [(id: UInt64, request: WriteRequest)],
        answeringTo target: some WriteAnswerTarget,
        mayCommitHere: Bool = false
    ) {
        guard !requests.isEmpty else { return }
        let pending = requests.lazy.map { WriteQueue.Pending(request: $0.request, reply: .answer(requestID: $0.id, target: target)) }
        // With `--durability full` a commit waits for an fsync: that is the writer's to wait for,
        // never an event loop's.
        if mayCommitHere, storage.durability != .full, queue.reserveIfIdle() {
            let deadline = storage.materializationDeadline
            let batch = Array(pending)
            Self.reply(to: batch, with: commit(batch.map(\.request)))
            // The writer sleeps until the next materialisation is due: tell it when that changed.
            queue.finishCommit(wakeWriter: storage.materializationDeadline != deadline)
            return
        }
        if !queue.enqueue(pending) {
            let batch = DeliveryBatch()
            target.receive(requests.map { WriteAnswer(requestID: $0.id, result: .failure(Self.shuttingDown)) }, in: batch)
            batch.dispatch()
        }
    }

    private static let shuttingDown = SharedStateError(.unavailable, "syncd is shutting down and takes no more writes")

    /// Runs the writer until ``shutDown()``, then commits what is still queued and returns.
    ///
    /// The writer is a thread of its own that commits synchronously: SQLite blocks, and a thread
    /// that may block saves the hops between tasks an async writer pays on every write.
    func runWriter() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
                let thread = Thread { [self] in
                    while let batch = queue.take(limit: configuration.maxRequestsPerCommit, until: { storage.materializationDeadline }) {
                        let isIdle = batch.isEmpty
                        if !isIdle {
                            Self.reply(to: batch, with: commit(batch.map(\.request)))
                            if Self.holdsRestore(batch) { FreedElsewhere.free(consume batch) }
                        }
                        if isIdle || storage.isMaterializationDue { materialize() }
                        queue.finishCommit()
                    }
                    materialize()
                    finished.resume()
                }
                thread.name = "syncd-writer"
                thread.start()
            }
        } onCancel: {
            shutDown()
        }
    }

    /// Brings the database's `entries` table up to date with the committed state (see
    /// ``Storage/materialize()``). A failure loses nothing: the change log has every change, and
    /// the writer tries again later.
    private func materialize() {
        do {
            try storage.materialize()
        } catch {
            logger.error(
                "could not write the current entries to the database; will retry",
                metadata: ["database": "\(storage.path)", "error": "\(error)"]
            )
        }
    }

    /// Whether `batch` holds a restore, whose million entries would take the writer a tenth of a
    /// second to free while other writes wait.
    private static func holdsRestore(_ batch: [WriteQueue.Pending]) -> Bool {
        batch.contains {
            if case .restore = $0.request { return true }
            return false
        }
    }

    /// Hands each write's result to whoever waits for it: every answer for one connection in a
    /// single call, in submission order.
    private static func reply(to batch: [WriteQueue.Pending], with results: [Result<WriteOutcome, SharedStateError>]) {
        var answers: [ObjectIdentifier: (target: any WriteAnswerTarget, answers: [WriteAnswer])] = [:]
        var order: [ObjectIdentifier] = []
        for (pending, result) in zip(batch, results) {
            switch pending.reply {
            case .callback(let completion):
                completion(result)
            case .answer(let requestID, let target):
                let identifier = ObjectIdentifier(target)
                if answers[identifier] == nil {
                    answers[identifier] = (target, [])
                    order.append(identifier)
                }
                answers[identifier]!.answers.append(WriteAnswer(requestID: requestID, result: result))
            }
        }
        let batch = DeliveryBatch()
        for identifier in order {
            let group = answers[identifier]!
            group.target.receive(group.answers, in: batch)
        }
        batch.dispatch()
    }

    /// Stops taking writes; ``runWriter()`` returns once those already queued are committed.
    func shutDown() {
        queue.close()
    }

    /// Plans, commits and publishes a group of writes; returns each one's result.
    private func commit(_ batch: [WriteRequest]) -> [Result<WriteOutcome, SharedStateError>] {
        // Keys written by earlier requests of this batch: nil means deleted.
        var overlay: [String: Entry?] = [:]
        var revision = published.withLock { $0.revision }
        var results: [Result<WriteOutcome, SharedStateError>] = []
        var revisions: [CommittedRevision] = []
        results.reserveCapacity(batch.count)

        for var request in batch {
            if case .expireEphemeral(let session?, _) = request {
                var keys = published.withLock { $0.ephemeralKeys[session] ?? [] }
                for (key, entry) in overlay where entry?.ephemeralSession == session { keys.insert(key) }
                request = .expireEphemeral(session: session, keys: keys.sorted())
            }
            if case .restore(let entries, _) = request {
                // A restore makes the state as the backup has it: after the writes planned
                // before it in this batch too.
                let order = published.withLock { $0.entries.order }
                let candidates = RestoreCandidates.find(in: entries, against: order, written: Set(overlay.keys))
                request = .restore(entries: candidates.entries, currentKeys: candidates.currentKeys)
            }
            do {
                let plan = try WritePlanner.plan(request, revision: revision + 1) { key in
                    if let written = overlay[key] { return written }
                    return published.withLock { $0.entries[key] }?.entry(key: key)
                }
                if !plan.changes.isEmpty {
                    revision += 1
                    for change in plan.changes {
                        overlay.updateValue(change.type == .put ? change.entry : nil, forKey: change.key)
                    }
                    revisions.append(CommittedRevision(revision: revision, changes: plan.changes))
                }
                results.append(.success(plan.outcome))
            } catch {
                results.append(.failure(error))
            }
        }

        if !revisions.isEmpty {
            do {
                try storage.commit(revisions)
            } catch {
                logger.error(
                    "commit failed; the writes were refused",
                    metadata: ["database": "\(storage.path)", "error": "\(error)", "requests": "\(batch.count)"]
                )
                let failure = SharedStateError(.unavailable, "syncd could not commit to its database: \(error)")
                return results.map { result in result.flatMap { _ in .failure(failure) } }
            }
            // Made before taking the lock, which readers share.
            let stored = overlay.mapValues { $0.map(StoredEntry.make) }
            published.withLock { state in
                for (key, entry) in stored {
                    state.set(key, to: entry)
                }
                state.revision = revision
                state.watches.deliver(revisions)
            }
        }
        return results
    }

    // MARK: Ephemeral keys

    /// Deletes the ephemeral keys still bound to a session that ended.
    ///
    /// The keys are looked up when the writer gets to this request, after every write the session
    /// queued before it ended, so an ephemeral put still in the queue is deleted too.
    func endSession(_ session: UInt64) {
        submit(.expireEphemeral(session: session, keys: [])) { [logger] result in
            if case .failure(let error) = result {
                logger.error(
                    "could not delete a closed session's ephemeral keys", metadata: ["session": "\(session)", "error": "\(error)"])
            }
        }
    }

    /// Deletes the ephemeral keys of sessions from before a restart: their owners are gone.
    ///
    /// Call it once, before ``runWriter()`` and before any client connects.
    func expireEphemeralKeysOfPreviousRun() throws(SharedStateError) {
        let keys = published.withLock { state in
            state.ephemeralKeys.values.flatMap { $0 }
        }
        guard !keys.isEmpty else { return }
        // The writer is not running yet: commit this one request directly.
        _ = try commit([.expireEphemeral(session: nil, keys: keys.sorted())])[0].get()
    }

    // MARK: Watches

    /// Registers a watch and sends its first frames to `subscriber`: the response to the watch
    /// request, then the snapshot or the replayed changes its start asks for. Live changes follow.
    ///
    /// - Throws: As ``beginWatch(id:prefixes:start:readable:ending:subscriber:)`` and ``catchUp(_:)``.
    func startWatch(
        id: UInt64,
        prefixes: [String],
        start: WatchStart,
        readable: KeyFilter? = nil,
        subscriber: some WatchSubscriber
    ) async throws(SharedStateError) {
        if let catchUp = try beginWatch(id: id, prefixes: prefixes, start: start, readable: readable, subscriber: subscriber) {
            try await self.catchUp(catchUp)
        }
    }

    /// What a watch is sent before its live changes, when it cannot be sent under the engine's
    /// lock: the revisions it missed, read back from the change log, or a snapshot or resync of
    /// more entries than ``Configuration/entriesReadInPlace``, read from a copy of the key order.
    /// The watch's live changes wait until ``catchUp(_:)`` has sent it.
    struct WatchCatchUp: Sendable {
        fileprivate enum Work: Sendable {
            case replay(through: UInt64)
            case entries(KeyOrder, kind: Sharedstate_V1_EventKind, revision: UInt64, respondsFirst: Bool)
        }

        fileprivate let watch: WatchRegistry.Watch
        fileprivate let work: Work
    }

    /// Registers a watch without waiting: sends the response and the snapshot at once when the
    /// start needs no replay and the snapshot is small, and otherwise returns what remains to send
    /// with ``catchUp(_:)``, holding the watch's live changes until then.
    ///
    /// - Throws: `invalidArgument` when the subscriber already has a watch with this id,
    ///   `futureRevision` when the start names a revision that has not happened yet, `compacted`
    ///   when replay would start before the oldest change kept.
    func beginWatch(
        id: UInt64,
        prefixes: [String],
        start: WatchStart,
        readable: KeyFilter? = nil,
        ending: (@Sendable () -> SharedStateError?)? = nil,
        subscriber: some WatchSubscriber
    ) throws(SharedStateError) -> WatchCatchUp? {
        let prefixes = prefixes.contains("") ? [] : prefixes
        let budget = configuration.entriesReadInPlace
        return try published.withLock { state throws(SharedStateError) in
            if state.watches.contains(id: id, of: subscriber) {
                throw SharedStateError(.invalidArgument, "watch id \(id) is already in use on this connection")
            }
            var watch = WatchRegistry.Watch(
                id: id,
                prefixes: prefixes,
                readable: readable,
                subscriber: subscriber,
                startsAfter: state.revision
            )
            watch.ending = ending
            switch start {
            case .snapshot:
                let entries = Self.entries(in: state.entries.order, selectedBy: prefixes, readable: readable, limit: budget + 1)
                guard entries.count <= budget else {
                    watch.heldFrames = []
                    state.watches.add(watch)
                    return WatchCatchUp(
                        watch: watch,
                        work: .entries(state.entries.order, kind: .snapshot, revision: state.revision, respondsFirst: true)
                    )
                }
                state.watches.add(watch)
                subscriber.send([
                    Self.watchResponse(id: id, revision: state.revision),
                    Self.eventFrame(watchID: id, kind: .snapshot, revision: state.revision, entries: entries),
                ])
                return nil
            case .now:
                state.watches.add(watch)
                subscriber.send([Self.watchResponse(id: id, revision: state.revision)])
                return nil
            case .after(let revision):
                if revision < state.compactedRevision {
                    throw SharedStateError(
                        .compacted,
                        "revision \(revision) is compacted; the change log starts after revision \(state.compactedRevision)"
                    )
                }
                if revision > state.revision {
                    // Revisions are never reused: see RequestRules.revisionAhead.
                    throw RequestRules.revisionAhead(revision, current: state.revision)
                }
                if revision == state.revision {
                    state.watches.add(watch)
                    subscriber.send([Self.watchResponse(id: id, revision: revision)])
                    return nil
                }
                watch.heldFrames = []
                state.watches.add(watch)
                let through = state.revision
                watch.startsAfter = revision
                return WatchCatchUp(watch: watch, work: .replay(through: through))
            }
        }
    }

    /// Sends a watch what ``beginWatch(id:prefixes:start:readable:ending:subscriber:)`` or
    /// ``resync(_:)`` left to send, followed by the live changes held meanwhile.
    ///
    /// - Throws: `compacted` when compaction removed part of a replay's range meanwhile,
    ///   `unavailable` when the change log cannot be read; the watch is removed then.
    func catchUp(_ catchUp: WatchCatchUp) async throws(SharedStateError) {
        let watch = catchUp.watch
        var frames: [ByteBuffer]
        switch catchUp.work {
        case .replay(let through):
            frames = [Self.watchResponse(id: watch.id, revision: watch.startsAfter)]
            frames.append(contentsOf: try await replayedFrames(of: watch, through: through))
        case .entries(let order, let kind, let revision, let respondsFirst):
            frames = respondsFirst ? [Self.watchResponse(id: watch.id, revision: revision)] : []
            do {
                let event = try await Self.onThreadPool {
                    Self.eventFrame(
                        watchID: watch.id,
                        kind: kind,
                        revision: revision,
                        entries: Self.entries(in: order, selectedBy: watch.prefixes, readable: watch.readable)
                    )
                }
                frames.append(event)
            } catch {
                _ = published.withLock { $0.watches.remove(id: watch.id, of: watch.subscriber) }
                throw error
            }
        }
        published.withLock { state in
            // The frames held meanwhile go out after these, under the lock, so that the next
            // delivery cannot overtake them.
            guard let held = state.watches.releaseHeldFrames(id: watch.id, of: watch.subscriber) else { return }
            watch.subscriber.send(frames + held)
        }
    }

    /// The frames of the revisions a watch missed, read back from the change log.
    private func replayedFrames(of watch: WatchRegistry.Watch, through: UInt64) async throws(SharedStateError) -> [ByteBuffer] {
        let logged: [CommittedRevision]
        do {
            logged = try await storage.changes(after: watch.startsAfter, through: through)
        } catch {
            _ = published.withLock { $0.watches.remove(id: watch.id, of: watch.subscriber) }
            throw SharedStateError(.unavailable, "cannot read the change log: \(error)")
        }
        // Compaction may have removed rows since the watch began: a replay must be whole.
        guard logged.count == Int(through - watch.startsAfter), logged.first?.revision == watch.startsAfter + 1 else {
            _ = published.withLock { $0.watches.remove(id: watch.id, of: watch.subscriber) }
            logger.notice(
                "a replay found the change log short",
                metadata: [
                    "after": "\(watch.startsAfter)", "through": "\(through)", "read": "\(logged.count)",
                    "first": "\(logged.first?.revision ?? 0)", "last": "\(logged.last?.revision ?? 0)",
                ]
            )
            throw SharedStateError(.compacted, "revision \(watch.startsAfter) was compacted while the watch started")
        }
        return logged.compactMap { WatchRegistry.eventFrame(for: watch, $0) }
    }

    /// Ends a watch; returns whether it existed.
    func cancelWatch(id: UInt64, of subscriber: some WatchSubscriber) -> Bool {
        published.withLock { $0.watches.remove(id: id, of: subscriber) }
    }

    /// Ends every watch of a subscriber that went away.
    func removeWatches(of subscriber: some WatchSubscriber) {
        published.withLock { $0.watches.removeAll(of: subscriber) }
    }

    /// Sends a resync to each of `subscriber`'s watches that missed changes while it was
    /// backlogged; called when its outbound queue has drained.
    ///
    /// - Returns: How many watches were resynchronised, and the resyncs too large to send under
    ///   the lock: run each with ``catchUp(_:)``; their watches hold live changes until then.
    func resync(_ subscriber: some WatchSubscriber) -> (count: Int, large: [WatchCatchUp]) {
        let budget = configuration.entriesReadInPlace
        return published.withLock { state in
            guard !subscriber.isBacklogged else { return (0, []) }
            let owed = state.watches.takeResyncs(of: subscriber)
            guard !owed.isEmpty else { return (0, []) }
            var frames: [ByteBuffer] = []
            var large: [WatchCatchUp] = []
            for watch in owed {
                let entries = Self.entries(in: state.entries.order, selectedBy: watch.prefixes, readable: watch.readable, limit: budget + 1)
                if entries.count <= budget {
                    frames.append(Self.eventFrame(watchID: watch.id, kind: .resync, revision: state.revision, entries: entries))
                } else {
                    state.watches.holdFrames(id: watch.id, of: subscriber)
                    let work = WatchCatchUp.Work.entries(
                        state.entries.order, kind: .resync, revision: state.revision, respondsFirst: false)
                    large.append(WatchCatchUp(watch: watch, work: work))
                }
            }
            if !frames.isEmpty { subscriber.send(frames) }
            logger.debug("resynchronised a subscriber that fell behind", metadata: ["watches": "\(owed.count)"])
            return (owed.count, large)
        }
    }

    /// Writes a consistent copy of the database to `path`; returns the revision it holds.
    func backup(to path: String) async throws(SharedStateError) -> UInt64 {
        do {
            return try await storage.backup(to: path)
        } catch {
            throw SharedStateError(.unavailable, "cannot back up the database: \(error)")
        }
    }

    /// How many watches `subscriber` has.
    func watchCount(of subscriber: some WatchSubscriber) -> Int {
        published.withLock { $0.watches.count(of: subscriber) }
    }

    /// The changes of `key` still in the change log, oldest first: the most recent `limit`, or
    /// all with nil; and the compacted revision.
    func history(of key: String, limit: Int?) async throws(SharedStateError) -> (changes: [Change], compactedRevision: UInt64) {
        let compacted = published.withLock { $0.compactedRevision }
        do {
            return (try await storage.history(of: key, limit: limit), compacted)
        } catch {
            throw SharedStateError(.unavailable, "cannot read the change log: \(error)")
        }
    }

    /// Tells every idle watch the current revision.
    func sendProgressNotices() {
        published.withLock { state in
            state.watches.sendProgress(revision: state.revision)
        }
    }

    // MARK: Compaction

    /// Removes the change log up to and including `revision`; returns the compacted revision.
    ///
    /// - Throws: `invalidArgument` for a revision above the current one, `unavailable` when the
    ///   database fails.
    @discardableResult
    func compact(through revision: UInt64) async throws(SharedStateError) -> UInt64 {
        let current = published.withLock { ($0.revision, $0.compactedRevision) }
        if revision > current.0 {
            throw SharedStateError(.invalidArgument, "cannot compact through revision \(revision): the current revision is \(current.0)")
        }
        if revision <= current.1 { return current.1 }
        // Refuse new replays from the compacted range first; replays already reading check
        // that they got every revision.
        published.withLock { $0.compactedRevision = max($0.compactedRevision, revision) }
        do {
            try await storage.compact(through: revision)
        } catch {
            throw SharedStateError(.unavailable, "cannot compact the change log: \(error)")
        }
        logger.info("compacted the change log", metadata: ["revision": "\(revision)"])
        return revision
    }

    /// Applies the retention policy (see ``RetentionPolicy``): compacts what it no longer keeps.
    func applyRetention(now: ContinuousClock.Instant = .now) async {
        let (revision, compacted) = published.withLock { ($0.revision, $0.compactedRevision) }
        guard let target = retention.withLock({ $0.compactionTarget(revision: revision, compacted: compacted, now: now) }) else {
            return
        }
        do {
            try await compact(through: target)
        } catch {
            logger.error("automatic compaction failed", metadata: ["error": "\(error)"])
        }
    }

    // MARK: Helpers

    private static func eventFrame(watchID: UInt64, kind: Sharedstate_V1_EventKind, revision: UInt64, entries: [Entry]) -> ByteBuffer {
        WatchRegistry.eventFrame(watchID: watchID, kind: kind, revision: revision, changes: entries.map { Change.put($0).wireValue })
    }

    /// The entries under `prefixes` that `readable` lets through, in byte order of their keys;
    /// at most `limit`. Found by range in the key order, so the cost follows what is returned,
    /// not the number of keys.
    private static func entries(
        in order: KeyOrder,
        selectedBy prefixes: [String],
        readable: KeyFilter?,
        limit: Int? = nil
    ) -> [Entry] {
        var selected: [Entry] = []
        for prefix in disjointPrefixes(prefixes) {
            let remaining = limit.map { $0 - selected.count }
            if let remaining, remaining <= 0 { break }
            let found = EntryTable.entries(in: order, withPrefix: prefix, limit: remaining, where: readable)
            selected.append(contentsOf: found.map { $0.entry() })
        }
        return selected
    }

    /// Runs CPU-bound work (reading a large range of entries, encoding it) on NIO's thread pool.
    static func onThreadPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async throws(SharedStateError) -> T {
        do {
            return try await NIOThreadPool.singleton.runIfActive { work() }
        } catch {
            throw SharedStateError(.unavailable, "syncd is shutting down")
        }
    }

    /// `prefixes` without those another one covers (`a/b/` under `a/`), in byte order: their
    /// ranges of keys follow each other in that order and do not overlap.
    static func disjointPrefixes(_ prefixes: [String]) -> [String] {
        if prefixes.isEmpty || prefixes.contains("") { return [""] }
        var kept: [String] = []
        for prefix in prefixes.sorted(by: KeyByteOrder.precedes) {
            if let last = kept.last, prefix.utf8.starts(with: last.utf8) { continue }
            kept.append(prefix)
        }
        return kept
    }

    private static func watchResponse(id: UInt64, revision: UInt64) -> ByteBuffer {
        let frame = Sharedstate_V1_ServerFrame.with {
            $0.response = .with {
                $0.id = id
                $0.watch = .with {
                    $0.watchID = id
                    $0.revision = revision
                }
            }
        }
        return Frame.encode(frame)
    }
}
