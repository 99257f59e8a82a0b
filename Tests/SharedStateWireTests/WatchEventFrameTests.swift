import Foundation
import NIOCore
import SharedStateWire
import Testing

/// The client's hand-written reader of watch events (D15) agrees with SwiftProtobuf on every frame
/// it reads, and leaves every other frame to it (``HandCodecHarness``); syncd's frame of a whole
/// revision, its record behind the watch id, is SwiftProtobuf's frame of that event.
@Suite struct WatchEventFrameTests {
    private func frame(_ fill: (inout Sharedstate_V1_WatchEvent) -> Void) throws -> [UInt8] {
        try Sharedstate_V1_ServerFrame.with { $0.event = .with(fill) }.serializedBytes()
    }

    private func decoded(_ bytes: [UInt8]) -> WatchEventFrame? {
        WatchEventFrame(frame: ByteBuffer(bytes: bytes))
    }

    /// The event as SwiftProtobuf reads it from `bytes`, in the hand reader's terms (each change
    /// with its previous entry, as a watch that asked for them reads it); nil unless it is an
    /// event other than `ENDED`.
    private func swiftProtobufs(_ bytes: [UInt8]) -> WatchEventFrame? {
        guard let frame = try? Sharedstate_V1_ServerFrame(serializedBytes: bytes), case .event(let wire) = frame.kind,
            let kind = WatchEventFrame.Kind(rawValue: UInt64(wire.kind.rawValue)), wire.kind != .ended
        else { return nil }
        return WatchEventFrame(
            watchID: wire.watchID, kind: kind, revision: wire.revision,
            changes: wire.changes.map { Change(wireValue: $0, previousValues: true) }, writerSession: wire.writerSession, cause: wire.cause)
    }

    private func agreesWithSwiftProtobuf(_ event: WatchEventFrame, _ bytes: [UInt8]) -> Bool {
        event == swiftProtobufs(bytes)
    }

    private static func entry(_ index: Int, value: Data) -> Sharedstate_V1_Entry {
        .with {
            $0.key = ["", "door/locked", "zé/\(index)", String(repeating: "ü/", count: 70)][index % 4]
            $0.value = value
            $0.version = [0, 1, 127, 128, .max][index % 5]
            $0.createRevision = UInt64(index) << (index % 8 * 8)
            $0.modRevision = UInt64(index + 1) << (index % 7 * 9)
            $0.ephemeralSession = index % 3 == 0 ? 0 : UInt64(index)
        }
    }

    @Test func readsEveryShapeOfEventAsSwiftProtobufDoes() throws {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<2_000 {
            let kind: Sharedstate_V1_EventKind = [.changes, .snapshot, .progress, .resync].randomElement(using: &generator)!
            let changes = (0..<[0, 1, 2, 5, 40].randomElement(using: &generator)!).map { index in
                Sharedstate_V1_Change.with {
                    $0.type = Bool.random(using: &generator) ? .put : .delete
                    let value = Data(repeating: UInt8(ascii: "7"), count: [0, 1, 127, 128, 20_000].randomElement(using: &generator)!)
                    $0.entry = Self.entry(round + index, value: value)
                    switch Int.random(in: 0..<3, using: &generator) {
                    case 0: $0.previous = Self.entry(round + index + 1, value: Data("\(index)".utf8))
                    case 1: $0.previousCompacted = true
                    default: break
                    }
                }
            }
            let bytes = try frame {
                $0.watchID = [0, 1, 300, .max].randomElement(using: &generator)!
                $0.kind = kind
                $0.revision = [0, 1, 1 << 40, .max].randomElement(using: &generator)!
                $0.changes = changes
                $0.writerSession = [0, 9, 1 << 33].randomElement(using: &generator)!
                $0.cause = ["", "door-lock: requestApplied(r7)", String(repeating: "ß", count: 200)].randomElement(using: &generator)!
            }
            let event = try #require(decoded(bytes), "\(kind), \(changes.count) changes")
            #expect(event.changes.count == changes.count)
            #expect(agreesWithSwiftProtobuf(event, bytes))
        }
    }

    @Test func readsFieldsInAnyOrder() throws {
        // Entry: mod_revision, key; Change: entry, type; WatchEvent: cause, a change, revision, watch_id.
        let entry: [UInt8] = [0x28, 5, 0x0A, 1, UInt8(ascii: "k")]
        let change: [UInt8] = [0x12, UInt8(entry.count)] + entry + [0x08, 1]
        let event: [UInt8] = [0x3A, 1, UInt8(ascii: "c"), 0x22, UInt8(change.count)] + change + [0x18, 5, 0x08, 2]
        let bytes: [UInt8] = [0x1A, UInt8(event.count)] + event
        let read = try #require(decoded(bytes))
        #expect(read.watchID == 2)
        #expect(
            read.changes == [
                Change(
                    type: .delete, entry: Entry(key: "k", value: Data(), version: 0, createRevision: 0, modRevision: 5), previous: .absent)
            ])
        #expect(read.revision == 5 && read.cause == "c")
        #expect(agreesWithSwiftProtobuf(read, bytes))
    }

    @Test func leavesEveryOtherFrameToSwiftProtobuf() throws {
        let welcome: [UInt8] = try Sharedstate_V1_ServerFrame.with { $0.welcome = .with { $0.protocolVersion = 1 } }.serializedBytes()
        let response: [UInt8] = try Sharedstate_V1_ServerFrame.with { $0.response = .with { $0.id = 1 } }.serializedBytes()
        let ended = try frame {
            $0.watchID = 1
            $0.kind = .ended
            $0.error = .with { $0.message = "the policy changed" }
        }
        let event = try frame {
            $0.watchID = 1
            $0.revision = 2
            $0.changes = [.with { $0.entry = .with { $0.key = "k" } }]
        }
        let revisionTwice: [UInt8] = [0x1A, 4, 0x18, 1, 0x18, 2]
        let keyTwice: [UInt8] = [0x1A, 10, 0x22, 8, 0x12, 6, 0x0A, 1, UInt8(ascii: "k"), 0x0A, 1, UInt8(ascii: "j")]
        let unknownField: [UInt8] = [0x1A, 2, 0x40, 1]
        let unknownKind: [UInt8] = [0x1A, 2, 0x10, 9]
        let unknownChangeType: [UInt8] = [0x1A, 4, 0x22, 2, 0x08, 2]
        let notUTF8: [UInt8] = [0x1A, 7, 0x22, 5, 0x12, 3, 0x0A, 1, 0xFF]
        let truncated = Array(event.dropLast())
        let overlongVarint: [UInt8] = [0x1A, 11, 0x08] + [UInt8](repeating: 0xFF, count: 9) + [0x02]
        let secondFrameField = event + [0x1A, 0]
        for (what, bytes) in [
            ("welcome", welcome), ("response", response), ("ended", ended), ("revision twice", revisionTwice),
            ("a key twice", keyTwice), ("an unknown field", unknownField), ("an unknown kind", unknownKind),
            ("an unknown change type", unknownChangeType), ("a key that is not UTF-8", notUTF8), ("truncated", truncated),
            ("a varint past 64 bits", overlongVarint), ("a second frame field", secondFrameField),
        ] {
            #expect(decoded(bytes) == nil, "\(what)")
        }
        #expect(decoded(event) != nil)
    }

    /// Whatever the bytes, an event read by hand is the event SwiftProtobuf reads from them.
    @Test func neverReadsAnEventSwiftProtobufWouldReadOtherwise() throws {
        let seeds = try (0..<8).map { index in
            try frame {
                $0.watchID = UInt64(index + 1)
                $0.kind = index % 4 == 0 ? .snapshot : .changes
                $0.revision = UInt64(index) << (index * 8)
                $0.changes = (0..<index % 3 + 1).map { offset in
                    .with {
                        $0.type = offset % 2 == 0 ? .put : .delete
                        $0.entry = Self.entry(index + offset, value: Data(repeating: UInt8(ascii: "2"), count: index * 10))
                        if index % 2 == 0 { $0.previous = Self.entry(index, value: Data("1".utf8)) }
                    }
                }
                $0.writerSession = UInt64(index)
                $0.cause = index % 4 == 0 ? "" : "why \(index)"
            }
        }
        let (disagreements, read) = HandCodecHarness.damage(seeds, read: decoded, reference: swiftProtobufs)
        #expect(disagreements.isEmpty, "\(disagreements.prefix(5))")
        // Some mutations (a value's byte, say) leave a readable event: the check above ran.
        #expect(read > 1_000)
    }
}
