import SharedStateWire

/// Where committed state comes from: the store that decides revisions, commits writes and keeps
/// their history, under the engine's local replica (``StateEngine``).
///
/// The engine keeps what every backend shares: the published entries and revision, reads,
/// watches, catch-up, resync and progress. A backend does the rest:
///
/// - it takes write requests (``submit(_:to:mayCommitHere:)``), commits them, and hands the
///   engine each committed revision, in order, through ``StateEngine/publish(_:entries:timing:)``;
///   a write is answered only once the engine has published its revision, so a client always
///   sees the event of revision R before the answer that carries R;
/// - it answers what the replica does not keep: the revisions after one (a watch's replay), the
///   entries at an old revision, a key's history, compaction and backups.
///
/// ``SQLiteBackend`` is the default: it plans each write against the engine's entries, commits
/// groups to a local SQLite file and publishes them from its writer thread. ``EtcdBackend`` sends
/// each write to an etcd cluster as one transaction and publishes what its one etcd watch over
/// syncd's prefix reports, whichever host wrote it.
protocol StateBackend: AnyObject, Sendable {
    /// The backend's name, as `syncctl status` shows it: `sqlite`, `etcd`.
    var name: String { get }

    /// Runs the backend's own work (a writer thread, a watch) until ``shutDown()``, publishing
    /// to `engine`; returns once the writes taken before the shutdown are answered.
    func run(publishingTo engine: StateEngine) async

    /// Stops taking writes; ``run(publishingTo:)`` returns soon after.
    func shutDown()

    /// Takes writes, in order: the backend answers each through its reply once it is committed
    /// and published, or has failed.
    ///
    /// - Parameter mayCommitHere: The caller's thread may commit the writes itself rather than
    ///   hand them over (see ``SQLiteBackend``); a backend may ignore it.
    /// - Returns: false, having taken nothing, once the backend no longer takes writes.
    func submit(_ writes: some Collection<WriteQueue.Pending>, to engine: StateEngine, mayCommitHere: Bool) -> Bool

    /// The revisions after `revision` through `through`, in order.
    ///
    /// - Throws: `compacted` when part of that range is no longer kept, `unavailable` when the
    ///   history cannot be read.
    func changes(after revision: UInt64, through: UInt64) async throws(SharedStateError) -> [CommittedRevision]

    /// The entry each of `keys` had at `revision` (nil: it did not exist); a key whose entry then
    /// is no longer known is left out.
    func entries(of keys: Set<String>, at revision: UInt64) async throws(SharedStateError) -> [String: Entry?]

    /// The changes of `key` still kept, oldest first: the most recent `limit`, or all with nil.
    func history(of key: String, limit: Int?) async throws(SharedStateError) -> [LoggedChange]

    /// Forgets the history up to and including `revision`.
    func compact(through revision: UInt64) async throws(SharedStateError)

    /// Writes a consistent copy of the state to `path`; returns the revision it holds.
    func backup(to path: String) async throws(SharedStateError) -> UInt64

    /// The entry of `key` as the store holds it now, and the revision it was read at; nil for a
    /// key that does not exist. With several hosts, it sees every write acknowledged anywhere
    /// before it was asked (a linearizable read); with one, it is the engine's own.
    func consistentEntry(_ key: String, in engine: StateEngine) async throws(SharedStateError) -> (entry: Entry?, revision: UInt64)

    /// Removes the ephemeral keys of `session`, which ended.
    func endSession(_ session: UInt64, in engine: StateEngine)

    /// What `syncctl status` shows of the backend.
    var status: BackendStatus { get }
}

/// The state a backend starts the engine from.
struct StartingState: Sendable {
    var entries: EntryTable
    var revision: UInt64
    var compactedRevision: UInt64
    /// The highest session id the backend names (a writer, or an ephemeral key's owner): this
    /// run's sessions are numbered above it, so no session id is ever used twice.
    var lastSessionID: UInt64 = 0
}

/// What `syncctl status` shows of a backend.
struct BackendStatus: Sendable {
    /// ``StateBackend/name``.
    var name: String
    /// Where the state is kept: the database file, or the etcd endpoint in use.
    var location: String
    /// The size of that database and of its write-ahead log, when it is a local file.
    var databaseBytes: UInt64 = 0
    var writeAheadLogBytes: UInt64 = 0
    var bytes: UInt64 { databaseBytes + writeAheadLogBytes }
    /// The revision the backend last heard of from its cluster; the engine's own for a local one.
    var sourceRevision: UInt64 = 0
    /// Since when (seconds since 1970) the engine has not heard from its backend, when it cannot:
    /// reads are served from the last state it applied meanwhile.
    var staleSince: Double?
}
