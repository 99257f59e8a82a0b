import Foundation
import Logging
import SharedStateWire
import Synchronization

/// The local replica of the shared state: the committed entries and revision, the reads and the
/// watches, over a ``StateBackend`` that keeps the state.
///
/// Writes arrive through ``submit(_:origin:completion:)`` from any connection. How they are
/// committed depends on the backend (``BackendWrites``): for a ``RevisionStore`` (SQLite) the
/// engine's writer plans each group against the published entries and the store makes it
/// durable; a ``WriteForwarder`` (etcd) sends them to the store that decides and reports its
/// revisions. Either way ``publish(_:entries:timing:)`` applies each committed revision to the
/// in-memory state and fans it out to watchers; only then is the write answered. Reads and watch
/// registration see only published state.
///
/// This file holds the published state and its reads; the rest of the engine is in extensions, a
/// concept each: `+Writes` (submission, publication, what a backend reports), `+GroupCommit` (the
/// writer for a store whose revisions syncd decides), `+Planning` (a group of writes against the
/// published entries), `+Sessions` (ephemeral keys), `+Watches` (start, catch-up, resync,
/// progress, a new access policy), `+Count` and `+Exists` (reads of many keys at once),
/// `+ChangeLog` (history, backup, compaction, retention), `+Restore` (a backup made the state,
/// narrowed off the writer) and `+Service` (its place in the daemon's service group). What the
/// engine sends leaves as values, through `Delivery/` (``DeliveryOrder``).
package final class StateEngine: Sendable {
    /// Tunables of the engine.
    package struct Configuration: Sendable {
        /// How many revisions the change log keeps; older ones are compacted. 0 keeps any number.
        package var retainedRevisions: UInt64
        /// How long the change log keeps a revision; nil keeps any age.
        package var retainedDuration: Duration?
        /// How often idle watches get a progress notice (and retention is checked).
        package var progressInterval: Duration
        /// The most entries a list, snapshot or resync reads under the engine's lock, on the
        /// caller's event loop. A larger one is read from a copy of the key order (see
        /// ``KeyOrder``) on NIO's thread pool, so neither the writer nor a loop waits for it.
        package var entriesReadInPlace: Int
        /// The most write requests one commit takes (for a ``RevisionStore``).
        package var maxWritesPerCommit: Int

        package init(
            retainedRevisions: UInt64 = 1_000_000,
            retainedDuration: Duration? = nil,
            progressInterval: Duration = .seconds(5),
            entriesReadInPlace: Int = 1_000,
            maxWritesPerCommit: Int = 1024
        ) {
            self.retainedRevisions = retainedRevisions
            self.retainedDuration = retainedDuration
            self.progressInterval = progressInterval
            self.entriesReadInPlace = entriesReadInPlace
            self.maxWritesPerCommit = maxWritesPerCommit
        }
    }

    /// Counts for `status`.
    package struct Statistics: Sendable {
        package var revision: UInt64
        package var keys: Int
        package var watches: Int
        package var compactedRevision: UInt64
        package var backend: BackendStatus
    }

    /// What readers and watchers see: the committed state.
    struct Published {
        var entries: EntryTable
        var revision: UInt64
        var compactedRevision: UInt64
        var watches = WatchRegistry()
        /// The keys bound to each session, so ending one does not scan every key.
        var ephemeralKeys: [UInt64: Set<String>] = [:]
        /// The keys written while a restore is narrowed off the writer; nil while none is.
        var restoreJournal: RestoreJournal?
        /// Rounds of output made while another thread held the hand-off (see ``DeliveryOrder``).
        var waitingRounds: [DeliveryRound] = []
        /// The schemas the `$schemas/` entries hold.
        var schemas = PrefixSchemas()

        /// Sets `key`, whose hash is `hash` when the caller has it, to `entry` (nil: deleted),
        /// keeping ``ephemeralKeys`` and ``schemas`` in step.
        mutating func set(_ key: String, hash: Int? = nil, to entry: StoredEntry?) {
            if SchemaKeys.isReserved(key) { schemas.follow(key, value: entry?.entry(key: key).value) }
            let replaced = entries.set(key, hash: hash, to: entry)
            if let previous = replaced?.ephemeralSession, previous != 0 {
                ephemeralKeys[previous]?.remove(key)
                if ephemeralKeys[previous]?.isEmpty == true { ephemeralKeys[previous] = nil }
            }
            if let session = entry?.ephemeralSession, session != 0 {
                ephemeralKeys[session, default: []].insert(key)
            }
        }
    }

    // Shared with the extensions that make up the engine; nothing outside them touches these.
    let backend: any StateBackend
    /// How the backend commits writes, asked once: every submission goes by it.
    let writes: BackendWrites
    let configuration: Configuration
    let logger: Logger
    let published: Mutex<Published>
    /// The highest session id the backend named at start-up: this run numbers its sessions above.
    package let lastSessionIDOfEarlierRuns: UInt64
    /// What the engine counts for `syncctl metrics` and `--metrics-address`.
    package let metrics = DaemonMetrics()
    let retention: Mutex<RetentionPolicy>
    /// The writes waiting for the writer, when the backend is a ``RevisionStore``.
    let queue = WriteQueue()
    /// Failed commits, logged once per interval with a count (a full disk fails every one).
    let commitFailures = Mutex(RepeatedFailureLog())

    /// Hands what the engine sends, as values, to the sink, in order.
    let delivery: DeliveryOrder

    /// Creates an engine over `backend`, starting from `state`, which the backend read, whose
    /// events and answers go to `sink`.
    package init(
        backend: any StateBackend, state: StartingState, configuration: Configuration = Configuration(), delivery sink: any DeliverySink,
        logger: Logger
    ) {
        precondition(configuration.progressInterval > .zero, "the progress interval must be positive")
        self.backend = backend
        self.writes = backend.writes
        self.delivery = DeliveryOrder(sink: sink)
        self.lastSessionIDOfEarlierRuns = state.lastSessionID
        self.configuration = configuration
        self.retention = Mutex(RetentionPolicy(maxRevisions: configuration.retainedRevisions, maxAge: configuration.retainedDuration))
        self.logger = logger
        var published = Published(entries: state.entries, revision: state.revision, compactedRevision: state.compactedRevision)
        // In key order, which is the order the entries were loaded and allocated in: memory read
        // front to back, not a cache miss per entry as in the index's order.
        state.entries.order.forEach(withPrefix: "") { entry in
            if entry.ephemeralSession != 0 { published.ephemeralKeys[entry.ephemeralSession, default: []].insert(entry.key) }
            return true
        }
        for stored in state.entries.entries(withPrefix: SchemaKeys.keyPrefix) {
            let entry = stored.entry()
            published.schemas.follow(entry.key, value: entry.value)
        }
        self.published = Mutex(published)
    }

    /// How often idle watches get a progress notice.
    var progressInterval: Duration { configuration.progressInterval }

    // MARK: Reads

    /// The current revision.
    package var revision: UInt64 { published.withLock { $0.revision } }

    /// The entry of `key`, if it exists, and the revision it was read at.
    package func entry(_ key: String) -> (entry: Entry?, revision: UInt64) {
        published.withLock { ($0.entries[key]?.entry(key: key), $0.revision) }
    }

    /// The entry of `key` as the store holds it now: one that other hosts write too is asked
    /// (see ``WriteForwarder/consistentEntry(_:)``); otherwise the engine's own is, since it
    /// publishes every write before answering it.
    package func consistentEntry(_ key: String) async throws(SharedStateError) -> (entry: Entry?, revision: UInt64) {
        switch self.writes {
        case .plannedHere: entry(key)
        case .forwarded(let forwarder): try await forwarder.consistentEntry(key)
        }
    }

    /// The result of ``list(prefix:limit:readable:)``.
    package struct Listing: Sendable {
        package var entries: [Entry]
        package var revision: UInt64
        package var hasMore: Bool
    }

    /// What ``list(prefix:limit:readable:)`` found.
    package enum ListOutcome: Sendable {
        case listed(Listing)
        /// More entries than may be read under the lock: read them with ``LargeListing/read()``,
        /// off the event loop.
        case tooLarge(LargeListing)
    }

    /// A list too large to read on the event loop: ``read()`` reads it from a copy of the key
    /// order taken when it was asked for, at the revision of that moment.
    package struct LargeListing: Sendable {
        fileprivate let order: KeyOrder
        fileprivate let revision: UInt64
        fileprivate let prefix: String
        fileprivate let start: String
        fileprivate let limit: Int?
        fileprivate let readable: KeyFilter?

        /// Reads the entries: it takes time, so call it off the event loop (as its encoding).
        package func read() -> Listing {
            StateEngine.listing(in: order, prefix: prefix, start: start, limit: limit, readable: readable, revision: revision)
        }
    }

    /// The entries whose keys start with `prefix`, in key order, from the first at or after
    /// `start` on, at most `limit` of them; or, when there are more than
    /// ``Configuration/entriesReadInPlace``, a ``LargeListing`` to read elsewhere.
    package func list(prefix: String, start: String = "", limit: Int?, readable: KeyFilter? = nil) -> ListOutcome {
        let budget = configuration.entriesReadInPlace
        return published.withLock { state in
            if let limit, limit <= budget {
                let listing = Self.listing(
                    in: state.entries.order, prefix: prefix, start: start, limit: limit, readable: readable, revision: state.revision)
                return .listed(listing)
            }
            let found = state.entries.entries(withPrefix: prefix, from: start, limit: budget + 1, where: readable)
            if found.count <= budget {
                let entries = found.prefix(limit ?? found.count).map { $0.entry() }
                return .listed(Listing(entries: entries, revision: state.revision, hasMore: found.count > entries.count))
            }
            let large = LargeListing(
                order: state.entries.order, revision: state.revision, prefix: prefix, start: start, limit: limit, readable: readable)
            return .tooLarge(large)
        }
    }

    private static func listing(
        in order: KeyOrder, prefix: String, start: String, limit: Int?, readable: KeyFilter?, revision: UInt64
    ) -> Listing {
        // One more than asked for tells whether there is more.
        let found = EntryTable.entries(in: order, withPrefix: prefix, from: start, limit: limit.map { $0 + 1 }, where: readable)
        var entries = found.map { $0.entry() }
        let hasMore = limit.map { entries.count > $0 } ?? false
        if let limit, hasMore { entries.removeSubrange(limit...) }
        return Listing(entries: entries, revision: revision, hasMore: hasMore)
    }

    /// Counts for `status`.
    package var statistics: Statistics {
        let backend = backend.status
        return published.withLock {
            Statistics(
                revision: $0.revision,
                keys: $0.entries.count,
                watches: $0.watches.count,
                compactedRevision: $0.compactedRevision,
                backend: backend
            )
        }
    }

    // MARK: Helpers

    /// The entries under `prefixes` that `readable` lets through, in byte order of their keys;
    /// at most `limit`. Found by range in the key order, so the cost follows what is returned,
    /// not the number of keys.
    static func entries(
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
}
