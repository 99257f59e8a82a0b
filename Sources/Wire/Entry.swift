import Foundation

/// A key, its current value and where the value came from in the revision history.
public struct Entry: Sendable, Hashable {
    /// The key.
    public var key: String
    /// The value: one JSON document, as UTF-8 bytes.
    public var value: Data
    /// Writes to this key since it was (last) created; 1 after the first put.
    public var version: UInt64
    /// The revision that created the key.
    public var createRevision: UInt64
    /// The revision of the last write to the key.
    public var modRevision: UInt64
    /// For an ephemeral key, the session it is bound to (it disappears when that session ends);
    /// 0 for a key that persists.
    public var ephemeralSession: UInt64

    /// Creates an entry.
    public init(
        key: String,
        value: Data,
        version: UInt64,
        createRevision: UInt64,
        modRevision: UInt64,
        ephemeralSession: UInt64 = 0
    ) {
        self.key = key
        self.value = value
        self.version = version
        self.createRevision = createRevision
        self.modRevision = modRevision
        self.ephemeralSession = ephemeralSession
    }
}

extension Entry {
    /// The entry as a wire message.
    public var wireValue: Sharedstate_V1_Entry {
        .with {
            $0.key = key
            $0.value = value
            $0.version = version
            $0.createRevision = createRevision
            $0.modRevision = modRevision
            $0.ephemeralSession = ephemeralSession
        }
    }

    /// The entry a wire message describes.
    public init(wireValue: Sharedstate_V1_Entry) {
        self.init(
            key: wireValue.key,
            value: wireValue.value,
            version: wireValue.version,
            createRevision: wireValue.createRevision,
            modRevision: wireValue.modRevision,
            ephemeralSession: wireValue.ephemeralSession
        )
    }
}
