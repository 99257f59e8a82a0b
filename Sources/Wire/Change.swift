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

    /// What is known of a key's entry before a change.
    public enum Previous: Sendable, Hashable {
        /// Not known: the watch did not ask for previous values, the change stands for several
        /// (a resync), or the entry before it is older than the change log holds.
        case unknown
        /// The key did not exist before the change.
        case absent
        /// The key's entry before the change.
        case entry(Entry)

        /// The value before the change: nil when the key did not exist, or when not known.
        public var value: Data? {
            if case .entry(let entry) = self { return entry.value }
            return nil
        }
    }

    /// Whether the key was written or removed.
    public var type: ChangeType
    /// For a put, the entry after the write. For a delete, the key with an empty value, version 0
    /// and `modRevision` set to the deleting revision.
    public var entry: Entry
    /// The key's entry before the change, for a watch that asked for previous values (like
    /// etcd's `prev_kv`); ``Previous/unknown`` otherwise.
    public var previous: Previous = .unknown

    /// The revision of the change.
    public var revision: UInt64 { entry.modRevision }
    /// The changed key.
    public var key: String { entry.key }

    /// Creates a change.
    public init(type: ChangeType, entry: Entry, previous: Previous = .unknown) {
        self.type = type
        self.entry = entry
        self.previous = previous
    }

    /// A put that left `entry` as the key's current entry.
    public static func put(_ entry: Entry) -> Change { Change(type: .put, entry: entry) }

    /// The deletion of `key` at `revision`.
    public static func delete(_ key: String, revision: UInt64) -> Change {
        Change(type: .delete, entry: Entry(key: key, value: Data(), version: 0, createRevision: 0, modRevision: revision))
    }
}

extension Change {
    /// The change as a wire message, without its previous entry (which only watch events carry,
    /// see ``Previous/wireFields(into:)``).
    public var wireValue: Sharedstate_V1_Change {
        .with {
            $0.type = type == .put ? .put : .delete
            $0.entry = entry.wireValue
        }
    }

    /// The change a wire message describes; `previousValues` says whether its watch asked for
    /// previous entries (without them, ``previous`` is ``Previous/unknown``).
    public init(wireValue: Sharedstate_V1_Change, previousValues: Bool = false) {
        let previous: Previous =
            if !previousValues || wireValue.previousCompacted {
                .unknown
            } else if wireValue.hasPrevious {
                .entry(Entry(wireValue: wireValue.previous))
            } else {
                .absent
            }
        self.init(type: wireValue.type == .delete ? .delete : .put, entry: Entry(wireValue: wireValue.entry), previous: previous)
    }
}

extension Change.Previous {
    /// Sets a watch event's change's `previous` and `previous_compacted` fields to say this.
    package func wireFields(into change: inout Sharedstate_V1_Change) {
        switch self {
        case .unknown: change.previousCompacted = true
        case .absent: break
        case .entry(let entry): change.previous = entry.wireValue
        }
    }
}
