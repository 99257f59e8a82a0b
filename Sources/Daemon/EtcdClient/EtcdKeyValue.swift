import Foundation

/// A key's entry as etcd keeps it, with etcd's own counters.
public struct EtcdKeyValue: Sendable, Equatable {
    public var key: Data
    public var value: Data
    /// The revision that created the key (since it last did not exist).
    public var createRevision: Int64
    /// The revision that last wrote it.
    public var modRevision: Int64
    /// Writes to the key since it was created: 1 for the first.
    public var version: Int64
    /// The lease the key is bound to; 0 for none.
    public var lease: Int64

    public init(key: Data, value: Data, createRevision: Int64, modRevision: Int64, version: Int64, lease: Int64 = 0) {
        self.key = key
        self.value = value
        self.createRevision = createRevision
        self.modRevision = modRevision
        self.version = version
        self.lease = lease
    }

    init(_ wire: Mvccpb_KeyValue) {
        self.init(
            key: wire.key, value: wire.value, createRevision: wire.createRevision, modRevision: wire.modRevision,
            version: wire.version, lease: wire.lease)
    }
}

/// One change a watch reports.
public struct EtcdEvent: Sendable, Equatable {
    public enum Kind: Sendable, Equatable { case put, delete }

    public var kind: Kind
    /// The key's entry after the change; for a delete, its key and the deleting revision as
    /// `modRevision`, with every other field 0.
    public var entry: EtcdKeyValue
    /// The key's entry before the change, when the watch asked for it and etcd still had it.
    public var previous: EtcdKeyValue?

    public init(kind: Kind, entry: EtcdKeyValue, previous: EtcdKeyValue? = nil) {
        self.kind = kind
        self.entry = entry
        self.previous = previous
    }

    init(_ wire: Mvccpb_Event) {
        self.init(
            kind: wire.type == .delete ? .delete : .put, entry: EtcdKeyValue(wire.kv),
            previous: wire.hasPrevKv ? EtcdKeyValue(wire.prevKv) : nil)
    }
}

/// Key ranges as etcd writes them: `[key, rangeEnd)`.
public enum EtcdKeyRange {
    /// The end of the range of every key that starts with `prefix`: the prefix with its last byte
    /// that is not 0xff incremented, and what follows it dropped. Every key, for an empty prefix
    /// (or one of 0xff bytes alone): `[0]`, etcd's "to the end".
    public static func end(ofPrefix prefix: Data) -> Data {
        var end = Array(prefix)
        while let last = end.last {
            if last < 0xff {
                end[end.count - 1] = last + 1
                return Data(end)
            }
            end.removeLast()
        }
        return Data([0])
    }
}
