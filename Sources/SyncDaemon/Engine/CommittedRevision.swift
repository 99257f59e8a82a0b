import Foundation
import NIOCore
import SharedStateWire

/// Every change one write request made, under the revision it was given.
struct CommittedRevision: Sendable {
    /// The revision.
    let revision: UInt64
    /// The changes, in the order the request made them.
    let changes: [Change]
    /// The changes as wire messages, converted once for every watcher.
    let wireChanges: [Sharedstate_V1_Change]
    /// The revision as an encoded `WatchEvent` without a watch id: the row of the change log, and
    /// the body of every watcher's frame that carries all of its changes.
    let logRecord: Data

    init(revision: UInt64, changes: [Change]) {
        self.revision = revision
        self.changes = changes
        let wireChanges = changes.map(\.wireValue)
        self.wireChanges = wireChanges
        let event = Sharedstate_V1_WatchEvent.with {
            $0.kind = .changes
            $0.revision = revision
            $0.changes = wireChanges
        }
        self.logRecord = (try? event.serializedBytes()) ?? Data()
    }

    /// Decodes a row of the change log.
    init(logRecord: Data) throws {
        let event = try Sharedstate_V1_WatchEvent(serializedBytes: logRecord)
        self.revision = event.revision
        self.wireChanges = event.changes
        self.changes = event.changes.map(Change.init(wireValue:))
        self.logRecord = logRecord
    }

    /// The frame telling watch `watchID` about every change of this revision, built from the
    /// encoded event without encoding it again: protobuf lets the `watch_id` field be written in
    /// front of the others, so each watcher costs a few header bytes and a copy.
    func frame(forWatch watchID: UInt64, allocator: ByteBufferAllocator) -> ByteBuffer {
        var watchIDField: [UInt8] = [0x08]  // field 1, varint
        Self.appendVarint(watchID, to: &watchIDField)
        let eventLength = watchIDField.count + logRecord.count
        var header: [UInt8] = [0x1A]  // ServerFrame field 3 (event), length-delimited
        Self.appendVarint(UInt64(eventLength), to: &header)
        var buffer = allocator.buffer(capacity: 4 + header.count + eventLength)
        buffer.writeInteger(UInt32(header.count + eventLength))
        buffer.writeBytes(header)
        buffer.writeBytes(watchIDField)
        buffer.writeBytes(logRecord)
        return buffer
    }

    private static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }
}
