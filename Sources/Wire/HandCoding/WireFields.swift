/// The field numbers of the messages some code reads or writes by hand (see
/// ``ProtobufFieldReader`` and ``ProtobufFieldWriter``), named as in sharedstate.proto. Only
/// those: every other message goes through SwiftProtobuf. All are below 16, so each field's key
/// is one byte.
package enum WireFields {
    /// `ClientFrame`.
    package enum ClientFrame {
        @inlinable package static var request: UInt8 { 2 }
    }

    /// `Request`, for puts.
    package enum Request {
        @inlinable package static var id: UInt8 { 1 }
        @inlinable package static var put: UInt8 { 3 }
    }

    /// `PutRequest`.
    package enum PutRequest {
        @inlinable package static var key: UInt8 { 1 }
        @inlinable package static var value: UInt8 { 2 }
        @inlinable package static var ifVersion: UInt8 { 3 }
        @inlinable package static var ephemeral: UInt8 { 4 }
        @inlinable package static var cause: UInt8 { 5 }
    }

    /// `ServerFrame`.
    package enum ServerFrame {
        @inlinable package static var response: UInt8 { 2 }
        @inlinable package static var event: UInt8 { 3 }
    }

    /// `Response`, for the answers to puts and deletes.
    package enum Response {
        @inlinable package static var id: UInt8 { 1 }
        @inlinable package static var put: UInt8 { 4 }
        @inlinable package static var delete: UInt8 { 5 }
    }

    /// `PutResponse` and `DeleteResponse` (which has only the revision).
    package enum WriteResponse {
        @inlinable package static var revision: UInt8 { 1 }
        @inlinable package static var version: UInt8 { 2 }
    }

    /// `WatchEvent`: a revision's frame, and the change log's row (without `watchID`).
    package enum WatchEvent {
        @inlinable package static var watchID: UInt8 { 1 }
        @inlinable package static var kind: UInt8 { 2 }
        @inlinable package static var revision: UInt8 { 3 }
        @inlinable package static var changes: UInt8 { 4 }
        @inlinable package static var writerSession: UInt8 { 6 }
        @inlinable package static var cause: UInt8 { 7 }
    }

    /// `LogSegment`: a row of the change log holding several revisions.
    package enum LogSegment {
        @inlinable package static var revisions: UInt8 { 1 }
    }

    /// `Change`.
    package enum Change {
        @inlinable package static var type: UInt8 { 1 }
        @inlinable package static var entry: UInt8 { 2 }
        @inlinable package static var previous: UInt8 { 3 }
        @inlinable package static var previousCompacted: UInt8 { 4 }
    }

    /// `Entry`.
    package enum Entry {
        @inlinable package static var key: UInt8 { 1 }
        @inlinable package static var value: UInt8 { 2 }
        @inlinable package static var version: UInt8 { 3 }
        @inlinable package static var createRevision: UInt8 { 4 }
        @inlinable package static var modRevision: UInt8 { 5 }
        @inlinable package static var ephemeralSession: UInt8 { 6 }
    }
}
