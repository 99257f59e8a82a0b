import SharedStateWire

@testable import SyncEngine
@testable import SyncSQLite

/// The engine's part in a test of ``Storage`` alone: a table of the committed entries that marks
/// what each commit changed, as the engine's table does when it publishes, so that materialising
/// writes the `entries` table as it does in syncd.
final class EngineStandIn {
    let storage: Storage
    private(set) var table: EntryTable

    /// Plays the engine over `storage`, from the state it loaded at a start (which marks what
    /// the start replayed), or from an empty table.
    init(_ storage: Storage, loaded: StartingState? = nil) {
        self.storage = storage
        table = loaded?.entries ?? EntryTable()
        table.tracksChanges = true
    }

    /// Commits `revisions`, then applies them to the table, as the engine publishes them.
    func commit(_ revisions: [CommittedRevision]) throws {
        try storage.commit(revisions)
        for change in revisions.flatMap(\.changes) {
            table.set(change.key, to: change.type == .put ? StoredEntry.make(change.entry) : nil)
        }
    }

    /// Materialises with the table's changes, and forgets them once written.
    @discardableResult
    func materialize() throws -> Bool {
        let table = self.table
        let wrote = try storage.materialize { table.changes }
        if wrote { self.table.forgetChanges() }
        return wrote
    }
}
