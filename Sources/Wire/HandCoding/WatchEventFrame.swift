import Foundation
import NIOCore

/// A server frame holding one watch event, written by syncd and read by the client straight from
/// the frame's bytes: what a client receives most often, without SwiftProtobuf's generic
/// decoding and the messages it allocates for the frame, the event, and each change and entry:
/// work run cold, on the subscriber's thread, for every change it receives (D15). syncd writes
/// the frame of a whole revision as its change log's record behind the watch id
/// (``frame(watchID:record:allocator:)``, D13).
///
/// It reads the shape syncd sends: the event's fields and each change's and entry's at most once
/// (changes repeat), no field it does not know, enum values it knows. Anything else — an `ENDED`
/// event, which carries an error, another frame, a field twice or unknown, a varint or a length
/// that runs past the end, a string that is not UTF-8 — makes ``init(frame:)`` return nil, and
/// SwiftProtobuf then decodes the frame or says what is wrong with it. `WatchEventFrameTests`
/// checks both agree.
package struct WatchEventFrame: Equatable {
    /// `EventKind`'s values, except `ENDED`, whose frame SwiftProtobuf reads.
    package enum Kind: UInt64, Sendable {
        case changes = 0, snapshot = 1, progress = 2, resync = 3
    }

    /// The watch the event is for.
    package var watchID: UInt64 = 0
    package var kind = Kind.changes
    package var revision: UInt64 = 0
    /// The changes, each with its previous entry as a watch with `previous_values` sees it.
    package var changes: [Change] = []
    /// The session that wrote the revision (0: syncd itself), and the cause its write carried.
    package var writerSession: UInt64 = 0
    package var cause = ""

    package init(watchID: UInt64, kind: Kind, revision: UInt64, changes: [Change], writerSession: UInt64, cause: String) {
        self.watchID = watchID
        self.kind = kind
        self.revision = revision
        self.changes = changes
        self.writerSession = writerSession
        self.cause = cause
    }

    /// The event in `payload` (a `ServerFrame` whose `event` is not `ENDED`), or nil for any
    /// other frame.
    package init?(frame payload: ByteBuffer) {
        guard let decoded = ProtobufFieldReader.soleMessage(WireFields.ServerFrame.event, of: payload, { Self(event: $0) })
        else { return nil }
        self = decoded
    }

    /// The frame telling watch `watchID` about every change of a revision whose change-log record
    /// (a `WatchEvent` without a watch id) is `record`, without encoding the record again:
    /// protobuf lets the `watch_id` field be written in front of the others, so each watcher
    /// costs a few header bytes and a copy.
    package static func frame(watchID: UInt64, record: Data, allocator: ByteBufferAllocator) -> ByteBuffer {
        typealias Writer = ProtobufFieldWriter
        let eventLength = 1 + Writer.varintSize(watchID) + record.count
        let frameLength = 1 + Writer.lengthDelimitedSize(eventLength)
        var buffer = allocator.buffer(capacity: 4 + frameLength)  // the length, then the frame
        buffer.writeInteger(UInt32(frameLength))
        buffer.writeProtobufFields(maximumBytes: 1 + 10 + 1 + 10) { writer in
            writer.key(WireFields.ServerFrame.event, .lengthDelimited)
            writer.varint(UInt64(eventLength))
            writer.varintField(WireFields.WatchEvent.watchID, watchID)
        }
        buffer.writeBytes(record)
        return buffer
    }

    private init?(event bytes: UnsafeRawBufferPointer) {
        typealias Event = WireFields.WatchEvent
        var event = ProtobufFieldReader(bytes)
        var seen = ProtobufFieldSet()
        while !event.isAtEnd {
            guard let tag = event.nextTag() else { return nil }
            // Changes repeat; every other field comes at most once.
            guard tag == Self.tag(Event.changes, .lengthDelimited) || seen.insert(tag) else { return nil }
            switch tag {
            case Self.tag(Event.watchID, .varint):
                guard let id = event.varint() else { return nil }
                watchID = id
            case Self.tag(Event.kind, .varint):
                guard let kind = event.varint().flatMap(Kind.init(rawValue:)) else { return nil }
                self.kind = kind
            case Self.tag(Event.revision, .varint):
                guard let revision = event.varint() else { return nil }
                self.revision = revision
            case Self.tag(Event.changes, .lengthDelimited):
                guard let bytes = event.lengthDelimited(), let change = Self.change(bytes) else { return nil }
                changes.append(change)
            case Self.tag(Event.writerSession, .varint):
                guard let session = event.varint() else { return nil }
                writerSession = session
            case Self.tag(Event.cause, .lengthDelimited):
                guard let cause = event.string() else { return nil }
                self.cause = cause
            default:
                return nil
            }
        }
    }

    /// A `Change`, its previous entry as ``Change/init(wireValue:previousValues:)`` reads it for a
    /// watch that asked for previous entries.
    private static func change(_ bytes: UnsafeRawBufferPointer) -> Change? {
        var fields = ProtobufFieldReader(bytes)
        var seen = ProtobufFieldSet()
        var type = Change.ChangeType.put
        var entry = Entry(key: "", value: Data(), version: 0, createRevision: 0, modRevision: 0)
        var previous: Entry?
        var isPreviousCompacted = false
        while !fields.isAtEnd {
            guard let tag = fields.nextTag(), seen.insert(tag) else { return nil }
            switch tag {
            case Self.tag(WireFields.Change.type, .varint):
                switch fields.varint() {
                case 0: type = .put
                case 1: type = .delete
                default: return nil
                }
            case Self.tag(WireFields.Change.entry, .lengthDelimited):
                guard let bytes = fields.lengthDelimited(), let read = Self.entry(bytes) else { return nil }
                entry = read
            case Self.tag(WireFields.Change.previous, .lengthDelimited):
                guard let bytes = fields.lengthDelimited(), let read = Self.entry(bytes) else { return nil }
                previous = read
            case Self.tag(WireFields.Change.previousCompacted, .varint):
                guard let flag = fields.varint() else { return nil }
                isPreviousCompacted = flag != 0
            default:
                return nil
            }
        }
        let known: Change.Previous =
            if isPreviousCompacted {
                .unknown
            } else if let previous {
                .entry(previous)
            } else {
                .absent
            }
        return Change(type: type, entry: entry, previous: known)
    }

    private static func entry(_ bytes: UnsafeRawBufferPointer) -> Entry? {
        var fields = ProtobufFieldReader(bytes)
        var seen = ProtobufFieldSet()
        var entry = Entry(key: "", value: Data(), version: 0, createRevision: 0, modRevision: 0)
        while !fields.isAtEnd {
            guard let tag = fields.nextTag(), seen.insert(tag) else { return nil }
            switch tag {
            case Self.tag(WireFields.Entry.key, .lengthDelimited):
                guard let key = fields.string() else { return nil }
                entry.key = key
            case Self.tag(WireFields.Entry.value, .lengthDelimited):
                guard let value = fields.lengthDelimited() else { return nil }
                entry.value = Data(value)
            case Self.tag(WireFields.Entry.version, .varint):
                guard let version = fields.varint() else { return nil }
                entry.version = version
            case Self.tag(WireFields.Entry.createRevision, .varint):
                guard let revision = fields.varint() else { return nil }
                entry.createRevision = revision
            case Self.tag(WireFields.Entry.modRevision, .varint):
                guard let revision = fields.varint() else { return nil }
                entry.modRevision = revision
            case Self.tag(WireFields.Entry.ephemeralSession, .varint):
                guard let session = fields.varint() else { return nil }
                entry.ephemeralSession = session
            default:
                return nil
            }
        }
        return entry
    }

    private static func tag(_ number: UInt8, _ type: ProtobufFieldReader.WireType) -> UInt8 {
        ProtobufFieldReader.tag(number, type)
    }
}
