import Foundation
import SharedStateWire

/// Every change one write request made, under the revision it was given.
struct CommittedRevision: Sendable {
    /// The revision.
    let revision: UInt64
    /// The changes, in the order the request made them.
    let changes: [Change]
    /// The changes as wire messages, converted once for every watcher.
    let wireChanges: [Sharedstate_V1_Change]

    init(revision: UInt64, changes: [Change]) {
        self.revision = revision
        self.changes = changes
        self.wireChanges = changes.map(\.wireValue)
    }

    /// Decodes a row of the change log.
    init(logRecord: Data) throws {
        let event = try Sharedstate_V1_WatchEvent(serializedBytes: logRecord)
        self.revision = event.revision
        self.wireChanges = event.changes
        self.changes = event.changes.map(Change.init(wireValue:))
    }

    /// The revision as a row of the change log: a `WatchEvent` without a watch id.
    var logRecord: Data {
        let event = Sharedstate_V1_WatchEvent.with {
            $0.kind = .changes
            $0.revision = revision
            $0.changes = wireChanges
        }
        return (try? event.serializedBytes()) ?? Data()
    }
}
