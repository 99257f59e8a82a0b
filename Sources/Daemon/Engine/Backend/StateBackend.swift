import SharedStateWire

/// Where committed state is kept: the store under the engine's local replica (``StateEngine``).
///
/// The engine decides and publishes; a backend stores and reports. The engine keeps what every
/// backend shares: the published entries and revision, reads, watches, catch-up, resync and
/// progress. A backend keeps the rest: the history behind the replica (a watch's replay, the
/// entries at an old revision, a key's history, compaction, backups), and the writes, in one of
/// two ways (``BackendWrites``):
///
/// - ``SQLiteBackend`` is a ``RevisionStore``: syncd is the only writer of a local SQLite file, so
///   the engine plans each group of writes against its entries and the store makes the group's
///   revisions durable before the engine publishes them.
/// - ``EtcdBackend`` is a ``WriteForwarder``: the state is in an etcd cluster that every host
///   writes, so the backend forwards each write as one transaction and reports what its one etcd
///   watch over syncd's prefix sees, whichever host wrote it.
///
/// No requirement hands a backend the engine: it answers what it is asked, and reports.
package protocol StateBackend: AnyObject, Sendable {
    /// The backend's name, as `syncctl status` shows it: `sqlite`, `etcd`.
    var name: String { get }

    /// How the backend commits writes.
    var writes: BackendWrites { get }

    /// The revisions after `revision` through `through`, in order.
    ///
    /// - Throws: `compacted` when part of that range is no longer kept, `unavailable` when the
    ///   history cannot be read.
    func changes(after revision: UInt64, through: UInt64) async throws(SharedStateError) -> [CommittedRevision]

    /// The entry each of `keys` had at `revision` (nil: it did not exist); a key whose entry then
    /// is no longer known is left out.
    ///
    /// - Parameter current: The engine's published entry of each key (nil: absent), read before
    ///   this call: a backend that keeps only recent revisions finds an older entry from it.
    func entries(of keys: Set<String>, at revision: UInt64, current: [String: Entry?]) async throws(SharedStateError) -> [String: Entry?]

    /// The changes of `key` still kept, oldest first: the most recent `limit`, or all with nil.
    func history(of key: String, limit: Int?) async throws(SharedStateError) -> [LoggedChange]

    /// Forgets the history up to and including `revision`.
    func compact(through revision: UInt64) async throws(SharedStateError)

    /// Writes a consistent copy of the state to `path`; returns the revision it holds.
    func backup(to path: String) async throws(SharedStateError) -> UInt64

    /// What `syncctl status` shows of the backend.
    var status: BackendStatus { get }
}

/// How a backend commits writes (see ``StateBackend``).
package enum BackendWrites: Sendable {
    /// syncd decides the revisions, and the store makes them durable.
    case plannedHere(any RevisionStore)
    /// Another store decides them; the backend forwards the writes and reports its revisions.
    case forwarded(any WriteForwarder)
}

/// The state a backend starts the engine from.
package struct StartingState: Sendable {
    package var entries: EntryTable
    package var revision: UInt64
    package var compactedRevision: UInt64
    /// The highest session id the backend names (a writer, or an ephemeral key's owner): this
    /// run's sessions are numbered above it, so no session id is ever used twice.
    package var lastSessionID: UInt64 = 0

    package init(entries: EntryTable, revision: UInt64, compactedRevision: UInt64, lastSessionID: UInt64 = 0) {
        self.entries = entries
        self.revision = revision
        self.compactedRevision = compactedRevision
        self.lastSessionID = lastSessionID
    }
}

/// What `syncctl status` shows of a backend.
package struct BackendStatus: Sendable {
    /// ``StateBackend/name``.
    package var name: String
    /// Where the state is kept: the database file, or the etcd endpoint in use.
    package var location: String
    /// The size of that database and of its write-ahead log, when it is a local file.
    package var databaseBytes: UInt64 = 0
    package var writeAheadLogBytes: UInt64 = 0
    package var bytes: UInt64 { databaseBytes + writeAheadLogBytes }
    /// The revision the backend last heard of from its cluster; the engine's own for a local one.
    package var sourceRevision: UInt64 = 0
    /// Since when (seconds since 1970) the engine has not heard from its backend, when it cannot:
    /// reads are served from the last state it applied meanwhile.
    package var staleSince: Double?
    /// What a local store's acknowledged writes survive, and how far its journal is behind the
    /// disk; nil for a backend that keeps no journal of its own.
    package var durability: Durability?

    /// What the promise of a store's `--durability` mode is, and how it is kept right now.
    package struct Durability: Sendable {
        /// `normal` or `full`.
        package var mode: String
        /// The longest an acknowledged write may stay unsynced (`normal`); zero with `full`.
        package var syncInterval: Duration
        /// How long the oldest acknowledged write not yet synced has waited; zero when none waits.
        package var unsyncedAge: Duration
        /// The bytes of the journal not yet synced.
        package var unsyncedBytes: UInt64
        /// The longest any acknowledged write stayed unsynced since syncd started.
        package var longestUnsyncedAge: Duration
        /// The appends that synced the journal themselves because the writer's sync was late.
        package var lateSyncs: Int
        /// The bytes of the journal's records not yet moved into the database.
        package var unmovedBytes: UInt64

        package init(
            mode: String, syncInterval: Duration, unsyncedAge: Duration, unsyncedBytes: UInt64, longestUnsyncedAge: Duration,
            lateSyncs: Int,
            unmovedBytes: UInt64
        ) {
            self.unmovedBytes = unmovedBytes
            self.mode = mode
            self.syncInterval = syncInterval
            self.unsyncedAge = unsyncedAge
            self.unsyncedBytes = unsyncedBytes
            self.longestUnsyncedAge = longestUnsyncedAge
            self.lateSyncs = lateSyncs
        }
    }

    package init(
        name: String, location: String, databaseBytes: UInt64 = 0, writeAheadLogBytes: UInt64 = 0, sourceRevision: UInt64 = 0,
        staleSince: Double? = nil, durability: Durability? = nil
    ) {
        self.durability = durability
        self.name = name
        self.location = location
        self.databaseBytes = databaseBytes
        self.writeAheadLogBytes = writeAheadLogBytes
        self.sourceRevision = sourceRevision
        self.staleSince = staleSince
    }
}
