/// The size limits that keep one client from hurting the others. syncd enforces them; the client
/// checks the same ones before sending so mistakes fail fast with the same message.
public struct Limits: Sendable, Hashable {
    /// The longest key, in UTF-8 bytes.
    public var maxKeyBytes: Int = 512
    /// The largest value, in bytes of JSON.
    public var maxValueBytes: Int = 1 << 20
    /// The deepest nesting of arrays and objects a value may have.
    public var maxValueDepth: Int = 100
    /// The largest frame a client may send. Leaves room for a transaction of a few full-size values.
    public var maxRequestFrameBytes: Int = 4 << 20
    /// The most operations one transaction may carry.
    public var maxTransactionOperations: Int = 128
    /// The most prefixes one watch may name.
    public var maxWatchPrefixes: Int = 64
    /// How many bytes may wait to be sent to one connection before it counts as backlogged: its
    /// watches then skip changes and are resynchronised with a snapshot once it catches up. Set
    /// when a connection is accepted, so a reload applies to new connections.
    public var maxOutboundQueueBytes: Int = 4 << 20
    /// The most clients connected at once that have completed the handshake; more are refused
    /// with `tooLarge` when they send their Hello.
    public var maxConnections: Int = 1024
    /// The most clients one user (uid) may have connected at once, past the handshake.
    public var maxConnectionsPerUser: Int = 256
    /// The most connections that have not sent their Hello yet. A new connection past it pushes
    /// the oldest of them out, so a flood of silent connections cannot keep a real client out.
    public var maxUnauthenticatedConnections: Int = 64
    /// Connections beyond ``maxConnections`` that only syncd's own user and root may take, so an
    /// administrator can always connect to look.
    public var reservedAdministratorConnections: Int = 4
    /// The most writes one connection may have waiting for their commit: past it, syncd stops
    /// reading the connection until answers go out, so the requests wait in the kernel's socket
    /// buffer, not in syncd's memory.
    public var maxWritesInFlightPerConnection: Int = 4096
    /// The most watches one connection may have.
    public var maxWatchesPerConnection: Int = 256
    /// How long a new connection may take to send its Hello (a client that sends nothing, or
    /// trickles bytes, is cut off after it).
    public var handshakeTimeoutSeconds: Int = 10

    /// The defaults: 512-byte keys, 1 MiB values, depth 100, 4 MiB request frames.
    public init() {}

    /// The defaults.
    public static let `default` = Limits()
}
