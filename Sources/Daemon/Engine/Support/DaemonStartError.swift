/// Why syncd could not start, as a sentence for the person starting it.
public struct DaemonStartError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, naming the file or socket involved.
    public var message: String

    package init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
