/// How hard a commit works before a write is acknowledged.
public enum Durability: String, Sendable, CaseIterable {
    /// Each commit group is written to the segment journal (the kernel holds it), and the database
    /// (WAL mode, `synchronous=NORMAL`) is synced each time the journal is moved into it: a commit
    /// survives any crash of syncd or any process (SIGKILL included); the last commits before a
    /// power loss may be lost.
    case normal
    /// Each commit group is synced to disk (`fdatasync` of the journal) before it is acknowledged,
    /// power loss included; the database runs with `synchronous=FULL`.
    case full
}
