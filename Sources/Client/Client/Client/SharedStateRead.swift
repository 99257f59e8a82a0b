import Foundation

/// A read of shared state that ``SharedStateBackend`` runs without a requirement of its own: the
/// read says how syncd answers it and how it reads the entries the in-memory stand-in holds, and
/// every backend runs it through ``SharedStateBackend/perform(_:)``.
///
/// A new read is one type of this kind, in one file, beside the method features call (an
/// extension of ``SharedStateBackend``); ``SharedStateClient``, the live dependency and
/// `InMemorySharedState` need nothing new. `exists` (``SharedStateBackend/exists(_:)``) is one.
public protocol SharedStateRead: Sendable {
    /// What the read answers.
    associatedtype Result: Sendable

    /// Asks syncd through `client`, in one request.
    nonisolated(nonsending) func read(through client: SharedStateClient) async throws(SharedStateError) -> Result

    /// Reads `entries` (each key's entry), the state at `revision`, as syncd would answer under
    /// `limits`: the in-memory stand-in's semantics, which must match syncd's.
    func read(in entries: [String: Entry], at revision: UInt64, limits: Limits) throws(SharedStateError) -> Result
}

extension SharedStateClient {
    /// Runs `read` against syncd (see ``SharedStateRead``).
    public nonisolated(nonsending) func perform<Read: SharedStateRead>(_ read: Read) async throws(SharedStateError) -> Read.Result {
        try await read.read(through: self)
    }
}
