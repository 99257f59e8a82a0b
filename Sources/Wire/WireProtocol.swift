/// Constants of the wire protocol that both sides agree on.
public enum WireProtocol {
    /// The protocol version this build speaks (see Protos/sharedstate/v1/sharedstate.proto).
    public static let version: UInt32 = 1

    /// The version string of this build of SharedState.
    public static let softwareVersion = "0.1.0"

    /// The largest frame a client accepts from syncd. Snapshots of many keys travel in one frame.
    public static let maxServerFrameBytes = 1 << 30
}
