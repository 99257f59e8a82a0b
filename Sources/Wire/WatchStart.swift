/// Where a new watch begins.
public enum WatchStart: Sendable, Hashable {
    /// A snapshot of the selected entries at the current revision R, then every change after R.
    case snapshot
    /// Every change after the current revision, without a snapshot.
    case now
    /// Every change after this revision, replayed from the change log, then live changes.
    case after(UInt64)
}
