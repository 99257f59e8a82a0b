/// Whether a ``SharedStateClient`` is connected to syncd.
public struct ConnectionState: Sendable, Hashable, CustomStringConvertible {
    private enum Base: Hashable, Sendable { case connected, reconnecting, closed }
    private let base: Base
    private init(_ base: Base) { self.base = base }

    /// Connected: calls go through and watches deliver.
    public static let connected = ConnectionState(.connected)
    /// syncd went away; the client is trying again. Calls fail at once with `unavailable`;
    /// watches wait and resume where they stopped.
    public static let reconnecting = ConnectionState(.reconnecting)
    /// ``SharedStateClient/close()`` was called, or reconnecting is turned off and syncd went away.
    public static let closed = ConnectionState(.closed)

    /// The state's name: `connected`, `reconnecting` or `closed`.
    public var description: String {
        switch base {
        case .connected: "connected"
        case .reconnecting: "reconnecting"
        case .closed: "closed"
        }
    }
}
