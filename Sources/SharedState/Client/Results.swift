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
    /// The daemon's database file.
    public var databasePath: String
}
