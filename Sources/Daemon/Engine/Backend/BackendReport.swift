import SharedStateWire

/// What a backend whose revisions another store decides (see ``WriteForwarder``) reports to the
/// engine: the backend reports, the engine decides what the replica does with it.
package enum BackendReport: Sendable {
    /// The store committed these revisions, after the last one reported, in order.
    case committed([CommittedRevision])
    /// The store reached `revision` without a change under the engine's keys (etcd's revisions
    /// count writes outside syncd's prefix too): the state at it is the state at the last change.
    case reached(UInt64)
    /// The store forgot the revisions the backend would report next (etcd compacted them), and
    /// read its entries again instead: they are `entries` at `revision`. The engine publishes
    /// what differs as one revision, and replays from before it are `compacted`.
    case readAgain(entries: [Entry], revision: UInt64)
    /// The backend no longer holds the revisions up to and including this one: replays from
    /// before it are `compacted`.
    case forgotten(through: UInt64)
}
