/// A failure to open or use syncd's database, naming the file.
public struct StorageError: Error, Sendable, CustomStringConvertible {
    /// The database file.
    public var path: String
    /// What went wrong, for a person.
    public var message: String

    public var description: String { "database \(path): \(message)" }
}
