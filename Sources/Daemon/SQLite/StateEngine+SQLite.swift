import Logging
import SyncEngine

package extension StateEngine {
    /// Creates an engine over a SQLite database, starting from the state it holds.
    convenience init(storage: Storage, configuration: Configuration = Configuration(), logger: Logger) throws {
        let backend = SQLiteBackend(storage: storage, logger: logger)
        self.init(backend: backend, state: try backend.load(), configuration: configuration, logger: logger)
    }
}
