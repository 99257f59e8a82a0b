import Foundation
import SyncClient
import Synchronization

/// Shared state in memory, with syncd's semantics: revisions, versions, compare-and-set,
/// transactions and gapless watches. The `testValue` of `@Dependency(\.sharedState)`.
///
/// Writes are planned by the same code syncd uses, and keys and values are checked by the same
/// rules, so a feature that passes its tests against this behaves the same against syncd.
///
/// Events come in syncd's order, deterministically: the watches a write changed see it one after
/// another, in the order they were started, each only once the one before has handled its batch
/// (its consumer came back for the next one), and the write returns after the last. So in a
/// `TestStore` a list screen's watch of `doors/` sends its action before the detail screen's
/// watch of `doors/1` sends its own, and both come before the action carrying the write's result,
/// as with syncd, where the event of R precedes the response carrying R. A watch whose consumer
/// is the writing task itself is not waited for; one whose consumer holds the stream without
/// pulling from it, or writes from a child task of its own (`async let`, a task group), makes
/// each such write wait a second before it goes on anyway. Writes made at the same time from
/// several tasks keep each watch's revisions in order, but may interleave across watches.
///
/// ```swift
/// let sharedState = InMemorySharedState(["climate/target": #"21.5"#])
/// let store = TestStore(initialState: Thermostat.State()) { Thermostat() } withDependencies: {
///     $0.sharedState = sharedState
/// }
/// ```
public final class InMemorySharedState: SharedStateBackend {
    private struct Watcher {
        var prefixes: [String]
        var buffer: WatchBuffer
    }

    /// How long a write waits for a watch's consumer to handle its batch.
    private static let handoffTimeout = Duration.seconds(1)

    private struct State {
        var entries: [String: Entry] = [:]
        var revision: UInt64 = 0
        var log: [WatchBatch] = []
        var watchers: [Int: Watcher] = [:]
        /// The next id for a watcher or a connection-state observer.
        var nextRegistration = 0
        var connectionState = ConnectionState.connected
        var connectionObservers: [Int: AsyncStream<ConnectionState>.Continuation] = [:]
        /// How many of the next writes fail, and with what (``failNextWrites(_:with:)``).
        var failingWrites: (count: Int, error: SharedStateError)?
        /// The ephemeral entries ``loseConnection()`` deleted, for ``reconnect()`` to put back.
        var droppedPresence: [Entry] = []
        /// The schemas the `$schemas/` entries hold, kept to as syncd keeps to them.
        var schemas = PrefixSchemas()
    }

    /// The session ephemeral keys are bound to.
    private static let session: UInt64 = 1

    private let state = Mutex(State())
    private let limits: Limits

    /// Creates shared state holding `values` (key to JSON document), each written at its own
    /// revision in key order.
    ///
    /// - Precondition: Every key and value is valid.
    public init(_ values: [String: String] = [:], limits: Limits = .default) {
        self.limits = limits
        for (key, json) in values.sorted(by: { $0.key < $1.key }) {
            do throws(SharedStateError) {
                try KeyRules.validateKey(key, limits: limits)
                try ValueRules.validateValue(Data(json.utf8), limits: limits)
                _ = try apply(.put(key: key, value: Data(json.utf8), ifVersion: nil))
            } catch {
                preconditionFailure("InMemorySharedState: initial value of \"\(key)\" is not valid: \(error)")
            }
        }
    }

    /// The current revision.
    public var revision: UInt64 { state.withLock { $0.revision } }

    /// The prefixes of each watch still open, oldest first: what a test checks to see that a
    /// feature's watch ended with it.
    public var watchedPrefixes: [[String]] {
        state.withLock { $0.watchers.sorted { $0.key < $1.key }.map(\.value.prefixes) }
    }

    /// Every entry, by key.
    public var entries: [String: Entry] { state.withLock { $0.entries } }

    /// The JSON of `key`'s value as text, or nil when it does not exist.
    public func json(_ key: String) -> String? {
        state.withLock { $0.entries[key].map { String(decoding: $0.value, as: UTF8.self) } }
    }

    /// The entry at `key`; throws `notFound` when it does not exist, as syncd does.
    public func get(_ key: String) async throws(SharedStateError) -> Entry {
        try KeyRules.validateKey(key, limits: limits)
        guard let entry = state.withLock({ $0.entries[key] }) else {
            throw RequestRules.notFound(key)
        }
        return entry
    }

    /// Writes `value` at `key` at the next revision, checked by syncd's key, value and schema
    /// rules; with `ifVersion`, only when the key's version is still that (0: absent). An
    /// ephemeral key belongs to this double's one session: ``loseConnection()`` deletes it.
    @discardableResult
    public func put(_ key: String, value: Data, ifVersion: UInt64? = nil, ephemeral: Bool = false) async throws(SharedStateError)
        -> PutResult
    {
        try KeyRules.validateKey(key, limits: limits)
        try ValueRules.validateValue(value, limits: limits)
        let outcome = try await write(.put(key: key, value: value, ifVersion: ifVersion, ephemeralSession: ephemeral ? Self.session : 0))
        guard case .put(let revision, let version) = outcome else { preconditionFailure("a put has a put outcome") }
        return PutResult(revision: revision, version: version)
    }

    /// Deletes `key` at the next revision and returns that revision; with `ifVersion`, only when
    /// the key's version is still that.
    @discardableResult
    public func delete(_ key: String, ifVersion: UInt64? = nil) async throws(SharedStateError) -> UInt64 {
        try KeyRules.validateKey(key, limits: limits)
        guard case .delete(let revision) = try await write(.delete(key: key, ifVersion: ifVersion)) else {
            preconditionFailure("a delete has a delete outcome")
        }
        return revision
    }

    /// The entries under `prefix` in key order, at most `limit` of them, with the revision they
    /// were read at.
    public func list(prefix: String = "", limit: Int? = nil) async throws(SharedStateError) -> ListResult {
        try KeyRules.validatePrefix(prefix, limits: limits)
        try RequestRules.validateListLimit(limit)
        return state.withLock { state in
            let matching = state.entries.values
                .filter { KeyRules.key($0.key, hasPrefix: prefix) }
                .sorted { $0.key < $1.key }
            let entries = limit.map { Array(matching.prefix($0)) } ?? matching
            return ListResult(entries: entries, revision: state.revision, isTruncated: entries.count < matching.count)
        }
    }

    /// How many keys lie under `prefix`, with the revision they were counted at.
    public func count(prefix: String = "") async throws(SharedStateError) -> CountResult {
        try KeyRules.validatePrefix(prefix, limits: limits)
        return state.withLock { state in
            CountResult(count: state.entries.values.count { KeyRules.key($0.key, hasPrefix: prefix) }, revision: state.revision)
        }
    }

    /// Runs a batched read against every entry at the current revision, as syncd runs it.
    public func perform<Read: SharedStateRead>(_ read: Read) async throws(SharedStateError) -> Read.Result {
        let limits = limits
        return try state.withLock { state throws(SharedStateError) in try read.read(in: state.entries, at: state.revision, limits: limits) }
    }

    /// Applies `transaction` at one revision: its compares decide whether its success or its
    /// failure operations are written.
    public func transaction(_ transaction: Transaction) async throws(SharedStateError) -> TransactionResult {
        try RequestRules.validateTransactionSize(
            transaction.compares.count + transaction.onSuccess.count + transaction.onFailure.count,
            limits: limits
        )
        for compare in transaction.compares { try KeyRules.validateKey(compare.key, limits: limits) }
        for operation in transaction.onSuccess + transaction.onFailure {
            try KeyRules.validateKey(operation.key, limits: limits)
            if let value = operation.value { try ValueRules.validateValue(value, limits: limits) }
        }
        let request = WriteRequest.transaction(
            compares: transaction.compares.map(\.request),
            onSuccess: transaction.onSuccess.map { $0.request(session: Self.session) },
            onFailure: transaction.onFailure.map { $0.request(session: Self.session) }
        )
        guard case .transaction(let succeeded, let revision) = try await write(request) else {
            preconditionFailure("a transaction has a transaction outcome")
        }
        return TransactionResult(succeeded: succeeded, revision: revision)
    }

    /// The changes under `prefixes` from `fromRevision` (from now when nil), delivered in
    /// syncd's order and one watch after another, as the type's overview describes.
    public func watch(prefixes: [String] = [""], fromRevision: UInt64? = nil) -> WatchStream {
        // Its batches wait for `write` to release them, one watch after another.
        let buffer = WatchBuffer(holdsUntilReleased: true)
        let stream = WatchStream(buffer: buffer)
        // No prefix means every key, as in syncd.
        let prefixes = prefixes.isEmpty ? [""] : prefixes
        do throws(SharedStateError) {
            try RequestRules.validateWatchPrefixCount(prefixes.count, limits: limits)
            for prefix in prefixes { try KeyRules.validatePrefix(prefix, limits: limits) }
            let current = revision
            if let fromRevision, fromRevision > current {
                throw RequestRules.revisionAhead(fromRevision, current: current)
            }
        } catch {
            buffer.finish(throwing: error)
            return stream
        }
        let id = state.withLock { state in
            if let fromRevision {
                for batch in state.log where batch.revision > fromRevision {
                    let changes = batch.changes.filter { Self.matches($0.key, prefixes) }
                    if !changes.isEmpty { buffer.yield(WatchBatch(kind: .changes, revision: batch.revision, changes: changes)) }
                }
            } else {
                let snapshot = state.entries.values
                    .filter { Self.matches($0.key, prefixes) }
                    .sorted { $0.key < $1.key }
                    .map(Change.put)
                buffer.yield(WatchBatch(kind: .snapshot, revision: state.revision, changes: snapshot))
            }
            buffer.release(through: state.revision)
            let id = state.nextRegistration
            state.nextRegistration += 1
            state.watchers[id] = Watcher(prefixes: prefixes, buffer: buffer)
            return id
        }
        buffer.onTermination { [weak self] in
            _ = self?.state.withLock { $0.watchers.removeValue(forKey: id) }
        }
        return stream
    }

    /// `connected` (or what ``setConnectionState(_:)`` set), then every change set.
    public func connectionStates() -> AsyncStream<ConnectionState> {
        let (stream, continuation) = AsyncStream.makeStream(of: ConnectionState.self)
        let (id, current) = state.withLock { state in
            defer { state.nextRegistration += 1 }
            if state.connectionState != .closed { state.connectionObservers[state.nextRegistration] = continuation }
            return (state.nextRegistration, state.connectionState)
        }
        continuation.yield(current)
        if current == .closed { continuation.finish() }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.connectionObservers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Tells every ``connectionStates()`` observer that the connection is now `connectionState`,
    /// so a test can drive a feature through a restart of syncd (`.reconnecting`, then
    /// `.connected`); `.closed` finishes them.
    public func setConnectionState(_ connectionState: ConnectionState) {
        let observers = state.withLock { state in
            state.connectionState = connectionState
            defer { if connectionState == .closed { state.connectionObservers = [:] } }
            return Array(state.connectionObservers.values)
        }
        for observer in observers {
            observer.yield(connectionState)
            if connectionState == .closed { observer.finish() }
        }
    }

    /// The batch a watch of `prefix` got at `revision`, as `.observe(prefix:as:)` hands it to a
    /// feature: for a test to expect the action a write led to without predicting its revision,
    /// versions or the order of its keys. Without `revision`, the latest revision that changed a
    /// key under `prefix`; a revision that changed none gives a batch without changes.
    ///
    /// Call it once the write happened, in the assertion of the `receive` the write led to:
    ///
    /// ```swift
    /// await store.send(.path(.element(id: 0, action: .setLocked(true))))
    /// await store.receive(\.doorsChanged) {
    ///     $0.lastBatch = sharedState.items(under: "doors/", as: Door.self)
    /// }
    /// ```
    public func items<Value: Codable & Sendable>(
        at revision: UInt64? = nil, under prefix: String, as type: Value.Type = Value.self
    ) -> SharedItems<Value> {
        let (batch, current) = state.withLock { state in
            let batch =
                revision.map { revision in state.log.last { $0.revision == revision } }
                ?? state.log.last { $0.changes.contains { Self.matches($0.key, [prefix]) } }
            return (batch, state.revision)
        }
        let changes = batch?.changes.filter { Self.matches($0.key, [prefix]) } ?? []
        return SharedItems(WatchBatch(kind: .changes, revision: batch?.revision ?? revision ?? current, changes: changes), as: Value.self)
    }

    // MARK: Faults, for testing a feature's error paths

    /// Ends every open watch with `error`, as syncd ends a watch whose keys the access policy no
    /// longer lets the process read (`permissionDenied`), or the client ends its watches when it
    /// is closed (`unavailable`). Watches started afterwards work again.
    public func endWatches(with error: SharedStateError) {
        let buffers = state.withLock { state in
            defer { state.watchers = [:] }
            return state.watchers.values.map(\.buffer)
        }
        for buffer in buffers { buffer.finish(throwing: error) }
    }

    /// Makes the next `count` writes (puts, deletes, transactions, and the puts of `update`) fail
    /// with `error` and change nothing: a write the access policy refuses (`permissionDenied`),
    /// one syncd could not commit (`unavailable`), a lost race (`conflict`).
    public func failNextWrites(_ count: Int = 1, with error: SharedStateError) {
        state.withLock { $0.failingWrites = count > 0 ? (count, error) : nil }
    }

    /// As syncd going away: the connection becomes `reconnecting`, and the process's ephemeral
    /// keys are deleted, as syncd deletes them when a session ends (the feature's watches see the
    /// deletions, as its watches of the live client do once they resume). ``reconnect()`` undoes
    /// it.
    public func loseConnection() async {
        setConnectionState(.reconnecting)
        let present = state.withLock { state in
            let present = state.entries.values.filter { $0.ephemeralSession != 0 }.sorted { $0.key < $1.key }
            state.droppedPresence += present
            return present
        }
        if !present.isEmpty { _ = try? await write(.expireEphemeral(session: nil, keys: present.map(\.key)), isFeatures: false) }
    }

    /// As syncd coming back after ``loseConnection()``: the ephemeral keys it deleted are put
    /// back, as the live client puts back its presence before its watches resume, then the
    /// connection is `connected` again.
    public func reconnect() async {
        let dropped = state.withLock { state in
            defer { state.droppedPresence = [] }
            return state.droppedPresence
        }
        for entry in dropped {
            _ = try? await write(
                .put(key: entry.key, value: entry.value, ifVersion: nil, ephemeralSession: Self.session), isFeatures: false)
        }
        setConnectionState(.connected)
    }

    /// Deletes the ephemeral keys, as syncd does when the writing process goes away.
    public func endSession() async {
        let keys = state.withLock { $0.entries.values.filter { $0.ephemeralSession != 0 }.map(\.key) }
        _ = try? await write(.expireEphemeral(session: nil, keys: keys), isFeatures: false)
    }

    /// Plans `request` at the next revision and applies it, then lets each watch it changed see
    /// the change, in the order they were started, once the one before handled it; returns after
    /// the last (see the type's discussion).
    ///
    /// - Parameter isFeatures: Whether the feature made it (not syncd, nor the client on its own,
    ///   as when it puts presence back): only those fail with ``failNextWrites(_:with:)``.
    @discardableResult
    private func write(_ request: WriteRequest, isFeatures: Bool = true) async throws(SharedStateError) -> WriteOutcome {
        if isFeatures, let failure = takeWriteFailure() { throw failure }
        let (outcome, revision, told) = try apply(request)
        for buffer in told {
            buffer.release(through: revision)
            await buffer.waitUntilHandled(through: revision, timeout: Self.handoffTimeout)
        }
        return outcome
    }

    /// Plans `request` at the next revision and applies it, handing the change to every matching
    /// watch (each holds it until ``write(_:)`` releases it); returns the outcome, the revision of
    /// the change, and the watches told, in the order they were started.
    private func apply(_ request: WriteRequest) throws(SharedStateError) -> (WriteOutcome, UInt64, [WatchBuffer]) {
        try state.withLock { state throws(SharedStateError) -> (WriteOutcome, UInt64, [WatchBuffer]) in
            // Read through `state` itself: a copy of the entries held across the mutation below
            // would make every write copy the whole dictionary.
            // The schemas, as syncd keeps to them.
            try PrefixSchemas.checkSchemaWrites(in: request)
            _ = try state.schemas.check(request) { prefix in
                state.entries.values.filter { KeyRules.key($0.key, hasPrefix: prefix) }.sorted { $0.key < $1.key }.map {
                    ($0.key, $0.value)
                }
            }
            let plan = try WritePlanner.plan(request, revision: state.revision + 1) { state.entries[$0] }
            guard !plan.changes.isEmpty else { return (plan.outcome, state.revision, []) }
            state.revision += 1
            for change in plan.changes {
                switch change.type {
                case .put: state.entries[change.key] = change.entry
                case .delete: state.entries[change.key] = nil
                }
                state.schemas.follow(change.key, value: change.type == .put ? change.entry.value : nil)
            }
            let batch = WatchBatch(kind: .changes, revision: state.revision, changes: plan.changes)
            state.log.append(batch)
            var told: [WatchBuffer] = []
            for id in state.watchers.keys.sorted() {
                let watcher = state.watchers[id]!
                let changes = batch.changes.filter { Self.matches($0.key, watcher.prefixes) }
                if !changes.isEmpty {
                    watcher.buffer.yield(WatchBatch(kind: .changes, revision: batch.revision, changes: changes))
                    told.append(watcher.buffer)
                }
            }
            return (plan.outcome, state.revision, told)
        }
    }

    /// The error the next write fails with, if ``failNextWrites(_:with:)`` asked for one.
    private func takeWriteFailure() -> SharedStateError? {
        state.withLock { state in
            guard let failing = state.failingWrites else { return nil }
            state.failingWrites = failing.count > 1 ? (failing.count - 1, failing.error) : nil
            return failing.error
        }
    }

    private static func matches(_ key: String, _ prefixes: [String]) -> Bool {
        prefixes.contains { KeyRules.key(key, hasPrefix: $0) }
    }
}
