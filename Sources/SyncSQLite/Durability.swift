/// How hard a commit works before a write is acknowledged.
public enum Durability: String, Sendable, CaseIterable {
    /// `synchronous=NORMAL` in WAL mode: a commit survives any crash of syncd or any process
    /// (SIGKILL included); the last commits before a power loss may be lost.
    case normal
    /// `synchronous=FULL`: every commit is on disk before it is acknowledged, power loss included.
    case full
}
