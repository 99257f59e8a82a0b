import SharedStateWire

/// What the engine tells one watch, as a value: the server makes its frame.
package enum WatchMessage: Sendable {
    /// What a run of entries stands for.
    package enum EntriesKind: Sendable {
        /// The watch's first state.
        case snapshot
        /// The state that replaces what a backlogged watch missed.
        case resync
    }

    /// The response to the watch request: the watch starts after `revision`.
    case started(revision: UInt64)
    /// A snapshot or a resync: `entries`, in key order, as they are at `revision`.
    case entries([Entry], EntriesKind, revision: UInt64)
    /// The changes of the round's revision at index `revision` of ``DeliveryRound/revisions``
    /// that the watch selects: all of them when `selected` is nil, else those at these indices,
    /// in order; each with the key's entry before it when `withPrevious`
    /// (``CommittedRevision/previous``).
    case changes(revision: Int, selected: [Int]?, withPrevious: Bool)
    /// The watch is current with `revision`.
    case progress(revision: UInt64)
    /// The watch may not go on, for `error`.
    case ended(revision: UInt64, error: SharedStateError)
}
