import Foundation
import SharedStateWire
import Testing

@testable import SyncEngine
@testable import SyncSQLite

/// The change log's journal (``SegmentJournal``): what was appended is read back whole; a record
/// cut short, damaged, or left from before the journal was emptied ends it and is cut off; a
/// file that is not a journal, or a journal of another database, stops the start with its name.
@Suite struct SegmentJournalTests {
    private func segment(_ first: UInt64, _ last: UInt64, bytes: Int = 40) -> SegmentJournal.Segment {
        SegmentJournal.Segment(first: first, last: last, body: Data((0..<bytes).map { UInt8(truncatingIfNeeded: Int(first) &* 31 &+ $0) }))
    }

    private func append(_ segments: [SegmentJournal.Segment], to journal: SegmentJournal) throws {
        for segment in segments { try journal.append(first: segment.first, last: segment.last, body: segment.body) }
    }

    private func size(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? -1
    }

    @Test func theChecksumIsCRC32C() {
        // The check value of the CRC-32C catalogue, and the slicing path against the bytewise one.
        #expect(Array("123456789".utf8).withUnsafeBytes { CRC32C.checksum($0) } == 0xE306_9283)
        let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let whole = bytes.withUnsafeBytes { CRC32C.checksum($0) }
        var piecewise: UInt32 = 0
        for byte in bytes { piecewise = [byte].withUnsafeBytes { CRC32C.checksum($0, continuing: piecewise) } }
        #expect(whole == piecewise)
        // The processor's instruction, where syncd uses it, against the tables, at every length
        // and alignment up to a few words.
        #expect(Array("123456789".utf8).withUnsafeBytes { CRC32C.tableChecksum($0) } == 0xE306_9283)
        var disagreeing: [Range<Int>] = []
        for start in 0..<9 {
            for end in start..<start + 40 {
                let checksums = bytes[start..<end].withUnsafeBytes {
                    (CRC32C.checksum($0, continuing: 0x1234), CRC32C.tableChecksum($0, continuing: 0x1234))
                }
                if checksums.0 != checksums.1 { disagreeing.append(start..<end) }
            }
        }
        #expect(disagreeing.isEmpty)
        #if arch(x86_64)
            // Every x86-64 processor since 2008 has SSE 4.2: the comparison above tried it.
            #expect(CRC32C.hasInstruction)
        #endif
    }

    @Test func appendedSegmentsAreReadBackInOrder() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("journal")
        let written = [segment(1, 1), segment(2, 5, bytes: 3000), segment(6, 6, bytes: 0)]
        do {
            let (journal, recovered) = try SegmentJournal.open(path: path, syncsEachAppend: true)
            #expect(recovered.segments.isEmpty && recovered.cutTail == nil)
            try append(written, to: journal)
            #expect(journal.size == UInt64(size(path)))
        }
        let (_, recovered) = try SegmentJournal.open(path: path, syncsEachAppend: false)
        #expect(recovered.segments == written)
        #expect(recovered.cutTail == nil)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }

    @Test func aRecordCutShortOrDamagedEndsTheJournalAndIsCutOff() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("journal")
        let (journal, _) = try SegmentJournal.open(path: path, syncsEachAppend: false)
        try append([segment(1, 1), segment(2, 3)], to: journal)
        let whole = size(path)
        try append([segment(4, 4, bytes: 500)], to: journal)
        journal.close()
        let complete = try Data(contentsOf: URL(fileURLWithPath: path))

        // Cut anywhere inside the last record, or one byte of it changed.
        var damaged = complete
        damaged[complete.count - 200] ^= 0x01
        for contents in [complete.prefix(whole + 10), complete.prefix(complete.count - 1), damaged] {
            try contents.write(to: URL(fileURLWithPath: path))
            let (reopened, recovered) = try SegmentJournal.open(path: path, syncsEachAppend: false)
            #expect(recovered.segments.map(\.last) == [1, 3])
            #expect(recovered.cutTail?.offset == UInt64(whole))
            #expect(recovered.cutTail?.bytes == UInt64(contents.count - whole))
            #expect(size(path) == whole)
            // Appends go on after the last whole record.
            try append([segment(4, 4)], to: reopened)
            reopened.close()
            #expect(try SegmentJournal.open(path: path, syncsEachAppend: false).1.segments.map(\.last) == [1, 3, 4])
        }
    }

    @Test func recordsFromBeforeTheJournalWasEmptiedAreNotRead() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("journal")
        let (journal, _) = try SegmentJournal.open(path: path, syncsEachAppend: false)
        try append([segment(1, 1), segment(2, 2), segment(3, 3)], to: journal)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        try journal.reset()
        try append([segment(4, 4)], to: journal)
        journal.close()
        // As a file system could leave it: the new record, then the old ones' bytes after it.
        let after = try Data(contentsOf: URL(fileURLWithPath: path))
        try (after + before.dropFirst(after.count)).write(to: URL(fileURLWithPath: path))
        let (_, recovered) = try SegmentJournal.open(path: path, syncsEachAppend: false)
        #expect(recovered.segments.map(\.last) == [4])
        #expect(recovered.cutTail?.offset == UInt64(after.count))
    }

    @Test func aFileThatIsNotAJournalIsRefusedWithoutChangingIt() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("journal")
        let contents = Data(repeating: 0x41, count: 100)
        try contents.write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try SegmentJournal.open(path: path, syncsEachAppend: false)
        } throws: { error in
            "\(error)".contains(path) && "\(error)".contains("not a syncd segment journal")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == contents)
    }

    // MARK: The journal under the storage

    private func put(_ revision: UInt64, _ key: String) -> CommittedRevision {
        CommittedRevision(
            revision: revision,
            changes: [.put(Entry(key: key, value: Data("\(revision)".utf8), version: 1, createRevision: revision, modRevision: revision))])
    }

    @Test func recordsTheDatabaseHoldsAlreadyAreSkippedAndTheJournalEmptied() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let storage = try Storage(path: path, durability: .normal)
        try storage.commit([put(1, "a"), put(2, "b")])
        // As if syncd died between moving the journal into the database and emptying it.
        let journal = try Data(contentsOf: URL(fileURLWithPath: path + "-segments"))
        try storage.materialize()
        try journal.write(to: URL(fileURLWithPath: path + "-segments"))

        let restarted = try Storage(path: path, durability: .normal)
        let loaded = try restarted.load()
        #expect(loaded.revision == 2)
        #expect(loaded.plainEntries.keys.sorted() == ["a", "b"])
        #expect(size(path + "-segments") == SegmentJournal.fileHeaderSize)
        try restarted.commit([put(3, "c")])
        #expect(try Storage(path: path, durability: .normal).load().revision == 3)
    }

    @Test func aJournalThatDoesNotFollowTheDatabaseStopsTheStart() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let storage = try Storage(path: path, durability: .normal)
        try storage.commit([put(1, "a")])
        try storage.materialize()
        try storage.commit([put(2, "b")])
        try storage.commit([put(3, "c")])
        let journal = try Data(contentsOf: URL(fileURLWithPath: path + "-segments"))
        try storage.close()
        // The database as a backup of revision 1 left it, with a journal of revisions 2–3, then
        // one of them lost: revision 3 does not follow revision 1.
        let (_, recovered) = try SegmentJournal.open(path: path + "-segments", syncsEachAppend: false)
        #expect(recovered.segments.isEmpty)
        let other = try Storage(path: directory.file("other.sqlite"), durability: .normal)
        try other.commit([put(1, "a")])
        try other.materialize()
        try other.close()
        try FileManager.default.removeItem(atPath: directory.file("other.sqlite-segments"))
        let (rebuilt, _) = try SegmentJournal.open(path: directory.file("other.sqlite-segments"), syncsEachAppend: false)
        let records = journal.withUnsafeBytes { bytes in
            let salt = bytes.loadUnaligned(fromByteOffset: SegmentJournal.magic.count, as: UInt64.self).littleEndian
            return SegmentJournal.records(in: bytes, salt: salt).0
        }
        #expect(records.map(\.last) == [2, 3])
        try rebuilt.append(first: records[1].first, last: records[1].last, body: records[1].body)
        rebuilt.close()
        #expect {
            _ = try Storage(path: directory.file("other.sqlite"), durability: .normal)
        } throws: { error in
            "\(error)".contains("other.sqlite-segments") && "\(error)".contains("revisions 3–3")
                && "\(error)".contains("last revision, 1")
        }
    }
}
