import Foundation

/// Where shared state lives, as a feature sees it: syncd through ``SharedStateClient``, or an
/// in-memory stand-in with the same semantics for tests.
///
/// Every write gets a new revision; each key has a version (writes since it was created), and
/// `ifVersion` (0: "must not exist") makes a write conditional. A watch delivers a snapshot, then
/// every change after it, in revision order, one batch per revision.
///
/// The requests are `nonisolated(nonsending)`: called from an actor (the main actor, where `.set`
/// runs), they run on it until they wait for the answer, so no other thread is woken to send
/// them. A conformer may still implement them as plain `async` methods, which run on the global
/// executor.
public protocol SharedStateBackend: Sendable {
    /// The entry of `key`; `notFound` when it does not exist.
    nonisolated(nonsending) func get(_ key: String) async throws(SharedStateError) -> Entry

    /// Sets `key` to `value` (one JSON document), if its version is `ifVersion` when given; with
    /// `ephemeral`, bound to this process's session, which deletes it when it ends.
    @discardableResult
    nonisolated(nonsending) func put(_ key: String, value: Data, ifVersion: UInt64?, ephemeral: Bool) async throws(SharedStateError)
        -> PutResult

    /// Removes `key`, if its version is `ifVersion` when given, and returns the revision.
    @discardableResult
    nonisolated(nonsending) func delete(_ key: String, ifVersion: UInt64?) async throws(SharedStateError) -> UInt64

    /// The entries under `prefix`, in key order, at most `limit` of them.
    nonisolated(nonsending) func list(prefix: String, limit: Int?) async throws(SharedStateError) -> ListResult

    /// How many keys start with `prefix` (empty: every key), without their entries.
    nonisolated(nonsending) func count(prefix: String) async throws(SharedStateError) -> CountResult

    /// Runs a read that has no requirement of its own (see ``SharedStateRead``), such as
    /// ``exists(_:)``.
    nonisolated(nonsending) func perform<Read: SharedStateRead>(_ read: Read) async throws(SharedStateError) -> Read.Result

    /// Applies `transaction` atomically, as one revision.
    nonisolated(nonsending) func transaction(_ transaction: Transaction) async throws(SharedStateError) -> TransactionResult

    /// Watches the keys under `prefixes`: a snapshot first (or, with `fromRevision`, every change
    /// after it), then every change, one batch per revision.
    func watch(prefixes: [String], fromRevision: UInt64?) -> WatchStream

    /// The connection's state now, then every change to it: `reconnecting` while syncd is away,
    /// `connected` when it is back (watches resume and presence is put back by themselves), and
    /// `closed` at the end, which finishes the stream.
    func connectionStates() -> AsyncStream<ConnectionState>
}

extension SharedStateBackend {
    /// Sets `key` to `value` (one JSON document).
    @discardableResult
    public nonisolated(nonsending) func put(_ key: String, value: Data) async throws(SharedStateError) -> PutResult {
        try await put(key, value: value, ifVersion: nil, ephemeral: false)
    }

    /// Sets `key` to the JSON document in `json`; see ``put(_:value:ifVersion:ephemeral:)``.
    @discardableResult
    public nonisolated(nonsending) func put(
        _ key: String,
        json: String,
        ifVersion: UInt64? = nil,
        ephemeral: Bool = false
    ) async throws(SharedStateError) -> PutResult {
        // Through the UTF-8 buffer: `Data(json.utf8)` asks the run time, on every call, whether
        // the view is `ContiguousBytes`, a dynamic cast before every copy.
        var json = json
        let value = json.withUTF8 { Data($0) }
        return try await put(key, value: value, ifVersion: ifVersion, ephemeral: ephemeral)
    }

    /// Removes `key` and returns the revision of the removal.
    @discardableResult
    public nonisolated(nonsending) func delete(_ key: String) async throws(SharedStateError) -> UInt64 {
        try await delete(key, ifVersion: nil)
    }

    /// Every entry under `prefix`, in key order.
    public nonisolated(nonsending) func list(prefix: String) async throws(SharedStateError) -> ListResult {
        try await list(prefix: prefix, limit: nil)
    }

    /// Watches the keys under `prefixes` from a snapshot.
    public func watch(prefixes: [String]) -> WatchStream {
        watch(prefixes: prefixes, fromRevision: nil)
    }
}

extension SharedStateClient: SharedStateBackend {}
