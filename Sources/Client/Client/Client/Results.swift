import Foundation

/// What a put did.
public struct PutResult: Sendable, Hashable {
    /// The revision of the write.
    public var revision: UInt64
    /// The key's version after the write.
    public var version: UInt64

    /// Creates a result.
    public init(revision: UInt64, version: UInt64) {
        self.revision = revision
        self.version = version
    }
}

/// A page of entries under a prefix.
public struct ListResult: Sendable, Hashable {
    /// The entries, in key order.
    public var entries: [Entry]
    /// The revision the list was read at.
    public var revision: UInt64
    /// True when the limit cut the list short.
    public var isTruncated: Bool

    /// Creates a result.
    public init(entries: [Entry], revision: UInt64, isTruncated: Bool) {
        self.entries = entries
        self.revision = revision
        self.isTruncated = isTruncated
    }
}

/// How many keys start with a prefix, and when they were counted.
public struct CountResult: Sendable, Hashable {
    /// The number of keys under the prefix that this client may read.
    public var count: Int
    /// The revision the keys were counted at.
    public var revision: UInt64

    /// Creates a result.
    public init(count: Int, revision: UInt64) {
        self.count = count
        self.revision = revision
    }
}

/// What a transaction did.
public struct TransactionResult: Sendable, Hashable {
    /// Whether every compare held (so the success branch was applied).
    public var succeeded: Bool
    /// The revision of the applied branch; the current revision if it wrote nothing.
    public var revision: UInt64

    /// Creates a result.
    public init(succeeded: Bool, revision: UInt64) {
        self.succeeded = succeeded
        self.revision = revision
    }
}

/// A summary of a running syncd.
public struct ServerStatus: Sendable, Hashable {
    /// The current revision.
    public var revision: UInt64
    /// How many keys exist.
    public var keys: UInt64
    /// How many clients are connected, this one included.
    public var clients: UInt64
    /// How many watches are active.
    public var watches: UInt64
    /// The newest revision removed from the change log (0 when nothing was compacted).
    public var compactedRevision: UInt64
    /// The size of the database and its write-ahead log.
    public var databaseBytes: UInt64
    /// Seconds since syncd started.
    public var uptimeSeconds: Double
    /// The daemon's version.
    public var serverVersion: String
    /// The daemon's database file; with the etcd backend, the etcd endpoint in use.
    public var databasePath: String
    /// Where the state is kept: `sqlite` or `etcd`.
    public var backend: String = "sqlite"
    /// With etcd: the newest revision etcd reported to syncd; syncd has caught up when
    /// ``revision`` reaches it.
    public var backendRevision: UInt64 = 0
    /// With etcd: since when syncd has been unable to reach etcd (reads then serve the last state
    /// it applied); nil while it can.
    public var staleSince: Date?
    /// With sqlite: what an acknowledged write survives, and how far the journal is behind the
    /// disk; nil with etcd.
    public var durability: DurabilityStatus?
}

/// What a syncd on SQLite promises for an acknowledged write, and how it keeps the promise now.
public struct DurabilityStatus: Sendable, Hashable {
    /// `normal`: a crash of syncd loses nothing acknowledged; a power cut can lose the writes of
    /// the last ``syncIntervalSeconds``. `full`: nothing acknowledged is ever lost.
    public var mode: String
    /// The longest an acknowledged write may wait unsynced (`normal`); 0 with `full`.
    public var syncIntervalSeconds: Double
    /// How long the oldest acknowledged write not yet synced has waited; 0 when none waits.
    public var unsyncedSeconds: Double
    /// The bytes of the journal not yet synced.
    public var unsyncedBytes: UInt64
    /// The longest any acknowledged write waited unsynced since syncd started.
    public var longestUnsyncedSeconds: Double
    /// The bytes of the journal's records not yet moved into SQLite.
    public var unmovedBytes: UInt64
}

/// One client connected to syncd.
public struct ClientInfo: Sendable, Hashable {
    /// Its session id.
    public var sessionID: UInt64
    /// The name it gave when it connected.
    public var name: String
    /// The process that connected, as the kernel reports it (0 if unknown).
    public var pid: Int32
    /// The user of that process (0 if unknown).
    public var uid: UInt32
    /// The primary group of that process (0 if unknown).
    public var gid: UInt32
    /// How many watches it has.
    public var watches: UInt64
    /// Bytes waiting to be sent to it.
    public var queuedBytes: UInt64
    /// How often it fell behind and was resynchronised.
    public var resyncs: UInt64
    /// Watch events delivered to it live, as revisions were committed.
    public var eventsDelivered: UInt64
    /// Its write requests refused for breaking a schema.
    public var schemaRefusals: UInt64 = 0
    /// How long it has been connected.
    public var connectedSeconds: Double
    /// Which place among syncd's connection limits it holds.
    public var admission: Admission
    /// The first violation of the latest of its writes refused for breaking a schema.
    public var lastSchemaRefusal: SchemaViolation?
    /// Its watches, by id; asked for with `clients(details: true)`, else empty.
    public var watchList: [WatchInfo] = []
    /// The ephemeral keys bound to its session, in byte order, at most 1,000; asked for with
    /// `clients(details: true)`, else empty. ``ephemeralKeyCount`` says how many there are.
    public var ephemeralKeys: [String] = []
    /// How many ephemeral keys are bound to its session, whether or not they were listed.
    public var ephemeralKeyCount: UInt64 = 0

    /// One watch of a connected client.
    public struct WatchInfo: Sendable, Hashable {
        /// The id its client gave it.
        public var id: UInt64
        /// The prefixes it selects; empty selects every key.
        public var prefixes: [String]
        /// Whether each change it is sent carries the key's entry before it.
        public var previousValues: Bool
        /// Whether it is still being sent what it is owed first (a replay or a snapshot).
        public var isCatchingUp: Bool
        /// Whether it fell behind and is owed a resync.
        public var owesResync: Bool
    }

    /// The place a connection holds among syncd's connection limits.
    public struct Admission: Sendable, Hashable, CustomStringConvertible {
        private enum Place: Hashable { case waitingForHello, client, reserved }
        private let place: Place

        /// It has not said Hello yet; the oldest of these is pushed out when a new connection
        /// needs a place.
        public static let waitingForHello = Admission(place: .waitingForHello)
        /// A client within the limits on clients, in all and per user.
        public static let client = Admission(place: .client)
        /// A client of syncd's own user or root beyond those limits, in a place kept for
        /// administrators.
        public static let reserved = Admission(place: .reserved)

        init(_ wireValue: Sharedstate_V1_Admission) {
            switch wireValue {
            case .client: place = .client
            case .reserved: place = .reserved
            default: place = .waitingForHello
            }
        }

        private init(place: Place) { self.place = place }

        /// `waitingForHello`, `client` or `reserved`.
        public var description: String {
            switch place {
            case .waitingForHello: "waitingForHello"
            case .client: "client"
            case .reserved: "reserved"
            }
        }
    }
}

/// The changes of one key that the change log still holds.
public struct KeyHistory: Sendable, Hashable {
    /// Oldest first.
    public var changes: [Change]
    /// Who made each change and why: `origins[i]` is the origin of `changes[i]`.
    public var origins: [ChangeOrigin]
    /// Changes up to this revision are no longer kept.
    public var compactedRevision: UInt64
}

/// Who made a change, and why.
public struct ChangeOrigin: Sendable, Hashable {
    /// The connection that wrote it.
    public var writer: Writer
    /// The cause its write carried; empty when it gave none.
    public var cause: String
}

/// The connection that wrote a revision, as its Hello and the kernel described it.
public struct Writer: Sendable, Hashable {
    /// Its session; 0 is syncd itself (the ephemeral keys of a session that ended).
    public var sessionID: UInt64
    /// The name it gave in its Hello ("syncd" for syncd itself).
    public var clientName: String
    /// The process, user and group that connected (`SO_PEERCRED`); syncd sends them to its own
    /// user and root only, and 0 to others.
    public var pid: Int32
    /// The user that connected (`SO_PEERCRED`), under the same rule as ``pid``.
    public var uid: UInt32
    /// The group that connected (`SO_PEERCRED`), under the same rule as ``pid``.
    public var gid: UInt32
}

/// What a backup wrote.
public struct BackupResult: Sendable, Hashable {
    /// The revision the backup holds.
    public var revision: UInt64
    /// The size of the file.
    public var bytes: UInt64
}

/// What a restore changed.
public struct RestoreResult: Sendable, Hashable {
    /// The revision of the restore (the current one if nothing differed).
    public var revision: UInt64
    /// How many keys it wrote.
    public var puts: UInt64
    /// How many keys it removed.
    public var deletes: UInt64
}
