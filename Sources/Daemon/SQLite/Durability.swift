/// How hard a commit works before a write is acknowledged (the README's "Durability" says what
/// each mode promises).
public enum Durability: String, Sendable, CaseIterable {
    /// Each commit group is appended to the segment journal (the kernel holds it) and answered: a
    /// commit survives any crash of syncd (SIGKILL included). The journal is synced within the
    /// sync interval (half of it by the writer; an append that finds it unsynced longer syncs it
    /// first), so a power cut loses at most the writes acknowledged in the last interval, and
    /// what is left is a prefix of the acknowledged history.
    case normal
    /// Each commit group is synced to disk (`fdatasync` of the journal) before it is acknowledged:
    /// nothing acknowledged is lost, power cuts included; the database runs with
    /// `synchronous=FULL`.
    case full
}
