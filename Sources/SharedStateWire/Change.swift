import Foundation

/// One key's change at one revision.
public struct Change: Sendable, Hashable {
    /// Whether a change wrote or removed its key.
    public enum ChangeType: String, Sendable, Hashable {
        /// The key was created or overwritten.
        case put
        /// The key was removed.
        case delete
    }

    /// Whether the key was written or removed.
    public var type: ChangeType
    /// For a put, the entry after the write. For a delete, the key with an empty value, version 0
    /// and `modRevision` set to the deleting revision.
    public var entry: Entry

    /// The revision of the change.
    public var revision: UInt64 { entry.modRevision }
    /// The changed key.
    public var key: String { entry.key }

    /// Creates a change.
    public init(type: ChangeType, entry: Entry) {
        self.type = type
        self.entry = entry
    }

    /// A put that left `entry` as the key's current entry.
    public static func put(_ entry: Entry) -> Change { Change(type: .put, entry: entry) }

    /// The deletion of `key` at `revision`.
    public static func delete(_ key: String, revision: UInt64) -> Change {
        Change(type: .delete, entry: Entry(key: key, value: Data(), version: 0, createRevision: 0, modRevision: revision))
    }
}

extension Change {
    /// The change as a wire message.
    public var wireValue: Sharedstate_V1_Change {
        .with {
            $0.type = type == .put ? .put : .delete
            $0.entry = entry.wireValue
        }
    }

    /// The change a wire message describes.
    public init(wireValue: Sharedstate_V1_Change) {
        self.init(type: wireValue.type == .delete ? .delete : .put, entry: Entry(wireValue: wireValue.entry))
    }
}
