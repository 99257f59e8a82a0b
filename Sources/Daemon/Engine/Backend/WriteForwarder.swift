import SharedStateWire

/// The write half of a backend whose revisions another store decides, one that other hosts
/// write too (``EtcdBackend``): the backend forwards each write to that store, and reports every
/// revision the store commits, whoever made it, in order (``BackendReport``); the engine
/// publishes what is reported.
package protocol WriteForwarder: AnyObject, Sendable {
    /// Hands the engine a write's result, for it to answer in order with what it sends.
    typealias Answer = @Sendable (PendingWrite, Result<WriteOutcome, SharedStateError>) -> Void

    /// Runs the backend's own work (following the store, keeping sessions alive) until
    /// ``shutDown()``, reporting through `report`; returns once the writes taken before the
    /// shutdown are answered.
    func run(reporting report: @escaping @Sendable (BackendReport) -> Void) async

    /// Stops taking writes; ``run(reporting:)`` returns soon after.
    func shutDown()

    /// Takes writes, in order, one session's after another's as they come. Each is answered
    /// through `answer` once the revision it made has been reported, so a client sees the event
    /// of revision R before the answer that carries R; or once it failed.
    ///
    /// - Returns: false, having taken nothing, once the backend no longer takes writes.
    func forward(_ writes: some Collection<PendingWrite>, answer: @escaping Answer) -> Bool

    /// The entry of `key` as the store holds it now, and the revision it was read at; it sees
    /// every write acknowledged on any host before it was asked (a linearizable read).
    func consistentEntry(_ key: String) async throws(SharedStateError) -> (entry: Entry?, revision: UInt64)

    /// Releases what binds a session's ephemeral keys (etcd: its lease): the store deletes them,
    /// and the backend reports that as any other revision. After the session's writes.
    func endSession(_ session: UInt64)
}
