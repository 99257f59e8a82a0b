import Foundation

/// The change log's record of a revision: a `WatchEvent` of kind `CHANGES` without a watch id,
/// the bytes a watch event of the whole revision shares (the daemon writes them by hand,
/// `LogRecordEncoding`, and prefixes a watch id to send them).
package enum LogRecord {
    /// What a record holds.
    package struct Contents: Sendable {
        package var revision: UInt64
        /// The session that wrote the revision (0: syncd itself).
        package var writerSession: UInt64
        /// The cause its write carried.
        package var cause: String
        package var changes: [Change]
    }

    /// Decodes a record.
    ///
    /// - Throws: SwiftProtobuf's error when the bytes are not a `WatchEvent`.
    package static func decode(_ record: Data) throws -> Contents {
        let event = try Sharedstate_V1_WatchEvent(serializedBytes: record)
        return Contents(
            revision: event.revision, writerSession: event.writerSession, cause: event.cause,
            changes: event.changes.map { Change(wireValue: $0) })
    }
}
