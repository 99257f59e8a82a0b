import SyncClient

/// One key under a watched prefix, its value decoded as `Value`.
public struct SharedItem<Value: Codable & Sendable>: Sendable {
    /// The key.
    public var key: String
    /// The value, or the reason it does not decode as `Value` (`invalidArgument`, for example
    /// after the type changed shape): a feature decides what a bad value means, nothing crashes.
    public var value: Result<Value, SharedStateError>
    /// Writes to the key since it was created.
    public var version: UInt64
    /// The revision that created the key: the order requests were made in.
    public var createRevision: UInt64
    /// The revision of the last write.
    public var modRevision: UInt64

    /// An item as a watch would carry it: for a test that expects an action holding one.
    ///
    /// ```swift
    /// SharedItem(key: "doors/1", value: .success(Door(isLocked: true)), version: 2, createRevision: 1, modRevision: 3)
    /// ```
    ///
    /// - Parameters:
    ///   - key: The key, in full (`doors/1`, not `1`).
    ///   - value: Its value decoded, or the error decoding it gave.
    ///   - version: Writes to the key since it was created: 1 after the first put.
    ///   - createRevision: The revision of the put that created the key.
    ///   - modRevision: The revision of its last write, which is the batch's revision for a key
    ///     the batch's revision wrote.
    public init(key: String, value: Result<Value, SharedStateError>, version: UInt64, createRevision: UInt64, modRevision: UInt64) {
        self.key = key
        self.value = value
        self.version = version
        self.createRevision = createRevision
        self.modRevision = modRevision
    }
}

extension SharedItem: Equatable where Value: Equatable {}

/// What changed under a watched prefix at one revision, values decoded as `Value`.
public struct SharedItems<Value: Codable & Sendable>: Sendable {
    /// The revision the batch brings the watcher to.
    public var revision: UInt64
    /// True for a snapshot (the first batch): ``puts`` is every key under the prefix. A resync
    /// (after falling behind, or a resume from a compacted revision) is a difference like any other
    /// batch: puts for what changed, deletes for what is gone.
    public var replacesAll: Bool
    /// Keys written, in key order for a snapshot and in write order otherwise.
    public var puts: [SharedItem<Value>]
    /// Keys deleted.
    public var deletes: [String]

    /// A batch as a watch would carry it: for a test that expects an action holding one.
    /// `InMemorySharedState.items(at:under:as:)` builds the one a write produced, with the
    /// revisions and versions it got.
    ///
    /// - Parameters:
    ///   - revision: The revision the batch brings the watcher to (a write's revision).
    ///   - replacesAll: True for the snapshot a watch starts with; false for a write's batch.
    ///   - puts: The keys written, with their new entries (in key order for a snapshot).
    ///   - deletes: The keys deleted.
    public init(revision: UInt64, replacesAll: Bool, puts: [SharedItem<Value>], deletes: [String]) {
        self.revision = revision
        self.replacesAll = replacesAll
        self.puts = puts
        self.deletes = deletes
    }

    /// Applies the batch to a dictionary of the decodable values by key; keys whose value does
    /// not decode are removed.
    public func apply(to values: inout [String: Value]) {
        if replacesAll { values.removeAll() }
        for key in deletes { values[key] = nil }
        for item in puts { values[item.key] = try? item.value.get() }
    }

    /// A watch's batch with its values decoded as `Value`, as `Effect/observe(prefix:as:_:catch:fileID:filePath:line:column:)`
    /// hands it to a feature (a value that does not decode is an item holding the error).
    public init(_ batch: WatchBatch, as type: Value.Type) {
        self.init(batch) { change in
            Result { () throws(SharedStateError) in
                try SharedKey<Value>.decode(change.entry.value, named: change.key)
            }
        }
    }

    init(_ batch: WatchBatch, decode: (Change) -> Result<Value, SharedStateError>) {
        self.revision = batch.revision
        self.replacesAll = batch.kind.replacesState
        self.puts = batch.changes.filter { $0.type == .put }.map { change in
            SharedItem(
                key: change.key,
                value: decode(change),
                version: change.entry.version,
                createRevision: change.entry.createRevision,
                modRevision: change.entry.modRevision
            )
        }
        self.deletes = batch.changes.filter { $0.type == .delete }.map(\.key)
    }
}

extension SharedItems: Equatable where Value: Equatable {}

extension SharedStateBackend {
    /// The keys under `prefix` with values of type `Value`: a snapshot first, then the changes of
    /// each revision. Progress notices are left out.
    public func items<Value: Codable & Sendable>(
        under prefix: String,
        as type: Value.Type = Value.self
    ) -> AsyncThrowingStream<SharedItems<Value>, Error> {
        // Read in the consumer's own task: a slow consumer leaves the watch's batches to fold.
        let iterator = WatchIterator(watch(prefixes: [prefix], fromRevision: nil).makeAsyncIterator())
        return AsyncThrowingStream(unfolding: {
            while let batch = try await iterator.next() {
                guard batch.kind != .progress else { continue }
                return SharedItems(batch, as: Value.self)
            }
            return nil
        })
    }
}
