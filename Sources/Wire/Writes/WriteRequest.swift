import Foundation

/// A write as the engine sequences it: already checked for well-formed keys and values.
package enum WriteRequest: Sendable {
    /// Sets `key` to `value`, if its version is `ifVersion` when one is given (0: must not exist),
    /// bound to `ephemeralSession` unless that is 0.
    case put(key: String, value: Data, ifVersion: UInt64?, ephemeralSession: UInt64 = 0)
    /// Removes `key`, if its version is `ifVersion` when one is given.
    case delete(key: String, ifVersion: UInt64?)
    /// Applies `onSuccess` if every compare holds, else `onFailure`, as one revision.
    case transaction(compares: [Compare], onSuccess: [WriteOperation], onFailure: [WriteOperation])
    /// Deletes those of `keys` that are still bound to `session` (or, with nil, to any session):
    /// the end of a session (its keys filled in by the engine when it plans the request), or the
    /// sessions of a previous run at start-up.
    case expireEphemeral(session: UInt64?, keys: [String])
    /// Makes the entries equal to `entries`: puts where a value differs, deletes for every other
    /// key of `currentKeys` (filled in by the engine when it plans the request). Both are planned
    /// in byte order of their keys, cheapest when they come so.
    ///
    /// With a `basis`, `entries` and `currentKeys` were already narrowed to what may differ from
    /// the state at `basis.revision`, off the writer; the engine then only adds the keys written
    /// since (see ``RestoreBasis``).
    case restore(entries: [Entry], currentKeys: [String] = [], basis: RestoreBasis? = nil)

    /// One operation inside a transaction.
    package enum WriteOperation: Sendable {
        case put(key: String, value: Data, ifVersion: UInt64?, ephemeralSession: UInt64 = 0)
        case delete(key: String, ifVersion: UInt64?)

        package var key: String {
            switch self {
            case .put(let key, _, _, _), .delete(let key, _): key
            }
        }
    }

    /// A condition on one key.
    package struct Compare: Sendable {
        package enum Target: Sendable {
            /// The key's version equals this; 0 means the key does not exist.
            case version(UInt64)
            /// The key exists with exactly these bytes.
            case value(Data)
        }
        package var key: String
        package var target: Target

        package init(key: String, target: Target) {
            self.key = key
            self.target = target
        }
    }
}

/// What a write request did.
package enum WriteOutcome: Sendable, Equatable {
    case put(revision: UInt64, version: UInt64)
    case delete(revision: UInt64)
    case transaction(succeeded: Bool, revision: UInt64)
    /// The revision of the deletions; the current revision if nothing was left to delete.
    case expired(revision: UInt64)
    /// The revision of the restore and how many keys it wrote and removed.
    case restored(revision: UInt64, puts: Int, deletes: Int)
}

extension WriteRequest {
    /// A health probe: an empty transaction goes through the writer like any write and changes
    /// nothing, so its completion proves the writer is alive.
    package static let probe = WriteRequest.transaction(compares: [], onSuccess: [], onFailure: [])
}
