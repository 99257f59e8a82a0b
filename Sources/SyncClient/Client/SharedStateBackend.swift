import Foundation

/// Where shared state lives, as a feature sees it: syncd through ``SharedStateClient``, or an
/// in-memory stand-in with the same semantics for tests.
///
/// Every write gets a new revision; each key has a version (writes since it was created), and
/// `ifVersion` (0: "must not exist") makes a write conditional. A watch delivers a snapshot, then
/// every change after it, in revision order, one batch per revision.
public protocol SharedStateBackend: Sendable {
    /// The entry of `key`; `notFound` when it does not exist.
    func get(_ key: String) async throws(SharedStateError) -> Entry

    /// Sets `key` to `value` (one JSON document), if its version is `ifVersion` when given; with
    /// `ephemeral`, bound to this process's session, which deletes it when it ends.
    @discardableResult
    func put(_ key: String, value: Data, ifVersion: UInt64?, ephemeral: Bool) async throws(SharedStateError) -> PutResult

    /// Removes `key`, if its version is `ifVersion` when given, and returns the revision.
    @discardableResult
    func delete(_ key: String, ifVersion: UInt64?) async throws(SharedStateError) -> UInt64

    /// The entries under `prefix`, in key order, at most `limit` of them.
    func list(prefix: String, limit: Int?) async throws(SharedStateError) -> ListResult

    /// Applies `transaction` atomically, as one revision.
    func transaction(_ transaction: Transaction) async throws(SharedStateError) -> TransactionResult

    /// Watches the keys under `prefixes`: a snapshot first (or, with `fromRevision`, every change
    /// after it), then every change, one batch per revision.
    func watch(prefixes: [String], fromRevision: UInt64?) -> AsyncThrowingStream<WatchBatch, Error>
}

extension SharedStateClient: SharedStateBackend {}
