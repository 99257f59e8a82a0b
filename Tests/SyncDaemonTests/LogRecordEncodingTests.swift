import Foundation
import SharedStateWire
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

/// The hand-written encoder of change-log records writes exactly SwiftProtobuf's bytes, so old
/// and new rows read the same and a replay sends the same events.
@Suite struct LogRecordEncodingTests {
    private func swiftProtobufRecord(revision: UInt64, changes: [Change], writerSession: UInt64, cause: String) throws -> Data {
        try Sharedstate_V1_WatchEvent.with {
            $0.kind = .changes
            $0.revision = revision
            $0.changes = changes.map(\.wireValue)
            $0.writerSession = writerSession
            $0.cause = cause
        }.serializedBytes()
    }

    @Test func writesSwiftProtobufsBytesForEveryShapeOfRevision() throws {
        let numbers: [UInt64] = [0, 1, 127, 128, 16_383, 16_384, 1 << 35, .max]
        var generator = SystemRandomNumberGenerator()
        for round in 0..<2_000 {
            let changes: [Change] = (0..<(round % 5)).map { index in
                let key = index % 3 == 0 ? "" : String(repeating: "k/é", count: Int.random(in: 1...60, using: &generator))
                if index % 4 == 3 { return .delete(key, revision: numbers.randomElement(using: &generator)!) }
                let value = Data(repeating: UInt8(ascii: "7"), count: [0, 1, 100, 127, 128, 20_000].randomElement(using: &generator)!)
                return .put(
                    Entry(
                        key: key, value: value, version: numbers.randomElement(using: &generator)!,
                        createRevision: numbers.randomElement(using: &generator)!, modRevision: numbers.randomElement(using: &generator)!,
                        ephemeralSession: numbers.randomElement(using: &generator)!))
            }
            let revision = numbers.randomElement(using: &generator)!
            let session = numbers.randomElement(using: &generator)!
            let cause = ["", "door-lock: requestApplied(r7)", String(repeating: "ü", count: 128)].randomElement(using: &generator)!
            let record = LogRecordEncoding.record(
                revision: revision, changes: RevisionChanges(changes), writerSession: session, cause: cause)
            let expected = try swiftProtobufRecord(revision: revision, changes: changes, writerSession: session, cause: cause)
            #expect(
                record == expected, "revision \(revision), \(changes.count) changes, session \(session), cause \(cause.utf8.count) bytes")
            if record != expected { return }
            // A lone put is encoded from the entry as the engine stores it.
            if changes.count == 1, changes[0].type == .put {
                let lonePut = RevisionChanges(put: changes[0].key, entry: StoredEntry.make(changes[0].entry))
                let fromStored = LogRecordEncoding.record(revision: revision, changes: lonePut, writerSession: session, cause: cause)
                #expect(fromStored == expected, "a lone put read from its stored entry")
                #expect(Array(lonePut) == changes)
            }
        }
    }

    @Test func aGroupEncodedTogetherIsTheSegmentOfItsRecords() throws {
        let writer = WriterIdentity(session: 9, clientName: "c", pid: 1, uid: 0, gid: 0)
        for count in [1, 2, 7, 200] {
            let revisions = (0..<count).map { index in
                let value = Data(repeating: UInt8(ascii: "1"), count: index % 3 == 0 ? 200 : 3)
                let put = Entry(key: "k\(index)", value: value, version: 1, createRevision: 5, modRevision: UInt64(100 + index))
                let changes =
                    switch index % 4 {
                    case 3: RevisionChanges([.delete("k\(index)", revision: UInt64(100 + index))])
                    case 2: RevisionChanges([.put(put), .delete("other", revision: UInt64(100 + index))])
                    default: RevisionChanges(put: put.key, entry: StoredEntry.make(put))
                    }
                return LogRecordEncoding.Revision(
                    revision: UInt64(100 + index), changes: changes,
                    origin: WriteOrigin(writer: index % 2 == 0 ? writer : nil, cause: index % 5 == 0 ? "cause \(index)" : ""))
            }
            let alone = revisions.map { CommittedRevision(revision: $0.revision, changes: $0.changes, origin: $0.origin) }
            let (body, records) = LogRecordEncoding.group(of: revisions, framedAs: LogSegment.framing)
            #expect(body == LogSegment.body(of: alone))
            #expect(records.map { body[$0] } == alone.map(\.logRecord))
            let read = try LogSegment.revisions(in: body, first: 100, last: UInt64(99 + count))
            #expect(read.map(\.changes) == revisions.map(\.changes))
        }
    }
}
