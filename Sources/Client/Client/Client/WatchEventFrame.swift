import Foundation
import NIOCore

/// A server frame holding one watch event, read straight from the frame's bytes: what a client
/// receives most often, without SwiftProtobuf's generic decoding and the messages it allocates for
/// the frame, the event, and each change and entry: work run cold, on the subscriber's thread,
/// for every change it receives (D15).
///
/// It reads the shape syncd sends: the event's fields and each change's and entry's at most once
/// (changes repeat), no field it does not know, enum values it knows. Anything else — an `ENDED`
/// event, which carries an error, another frame, a field twice or unknown, a varint or a length
/// that runs past the end, a string that is not UTF-8 — makes ``init(frame:)`` return nil, and
/// SwiftProtobuf then decodes the frame or says what is wrong with it. `WatchEventFrameTests`
/// checks both agree.
struct WatchEventFrame {
    /// The watch the event is for.
    var watchID: UInt64 = 0
    /// The event, with each change's previous entry as a watch with `previousValues` sees it.
    var batch = WatchBatch(kind: .changes, revision: 0, changes: [])

    /// The event in `payload` (a `ServerFrame` whose `event` is not `ENDED`), or nil for any
    /// other frame.
    init?(frame payload: ByteBuffer) {
        let decoded: WatchEventFrame? = payload.withUnsafeReadableBytes { bytes in
            var frame = ProtobufFieldReader(bytes)
            // ServerFrame.event and nothing else.
            guard frame.nextTag() == Self.tag(WireFields.ServerFrame.event, .lengthDelimited), let event = frame.lengthDelimited(),
                frame.isAtEnd
            else {
                return nil
            }
            return Self(event: event)
        }
        guard let decoded else { return nil }
        self = decoded
    }

    /// The batch a watch sees: with each change's previous entry only when it asked for them, and
    /// only in the changes of a revision. Consuming, so the changes are edited in place rather
    /// than copied, once per event.
    consuming func batch(previousValues: Bool) -> WatchBatch {
        if !previousValues || batch.kind != .changes {
            for index in batch.changes.indices { batch.changes[index].previous = .unknown }
        }
        return batch
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
                guard let kind = event.varint().flatMap(Self.kind) else { return nil }
                batch.kind = kind
            case Self.tag(Event.revision, .varint):
                guard let revision = event.varint() else { return nil }
                batch.revision = revision
            case Self.tag(Event.changes, .lengthDelimited):
                guard let bytes = event.lengthDelimited(), let change = Self.change(bytes) else { return nil }
                batch.changes.append(change)
            case Self.tag(Event.writerSession, .varint):
                guard let session = event.varint() else { return nil }
                batch.writerSession = session
            case Self.tag(Event.cause, .lengthDelimited):
                guard let cause = event.string() else { return nil }
                batch.cause = cause
            default:
                return nil
            }
        }
    }

    /// `EventKind`'s values, except `ENDED` (4), whose frame SwiftProtobuf reads.
    private static func kind(_ value: UInt64) -> WatchBatch.Kind? {
        switch value {
        case 0: .changes
        case 1: .snapshot
        case 2: .progress
        case 3: .resync
        default: nil
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
