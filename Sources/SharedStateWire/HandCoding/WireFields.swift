/// The field numbers of the messages some code reads or writes by hand (see
/// ``ProtobufFieldReader`` and ``ProtobufFieldWriter``), named as in sharedstate.proto. Only
/// those: every other message goes through SwiftProtobuf. All are below 16, so each field's key
/// is one byte.
package enum WireFields {
    /// `ServerFrame`.
    package enum ServerFrame {
        package static let event: UInt8 = 3
    }

    /// `WatchEvent`: a revision's frame, and the change log's row (without `watchID`).
    package enum WatchEvent {
        package static let watchID: UInt8 = 1
        package static let kind: UInt8 = 2
        package static let revision: UInt8 = 3
        package static let changes: UInt8 = 4
        package static let writerSession: UInt8 = 6
        package static let cause: UInt8 = 7
    }

    /// `Change`.
    package enum Change {
        package static let type: UInt8 = 1
        package static let entry: UInt8 = 2
        package static let previous: UInt8 = 3
        package static let previousCompacted: UInt8 = 4
    }

    /// `Entry`.
    package enum Entry {
        package static let key: UInt8 = 1
        package static let value: UInt8 = 2
        package static let version: UInt8 = 3
        package static let createRevision: UInt8 = 4
        package static let modRevision: UInt8 = 5
        package static let ephemeralSession: UInt8 = 6
    }
}
