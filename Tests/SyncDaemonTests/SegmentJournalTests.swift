import Foundation
import SharedStateWire
import Testing

@testable import SyncEngine
@testable import SyncSQLite

/// The change log's journal (``SegmentJournal``) and what start-up does with it
/// (``JournalRecovery``): what was appended is read back whole; only a torn end is cut, and what
/// is cut is kept; damage before the end, a missing, foreign or older journal, or a database
/// that went back behind its journal stop the start with the file, the offset and the revisions.
@Suite struct SegmentJournalTests {
    private func segment(_ first: UInt64, _ last: UInt64, bytes: Int = 40) -> SegmentJournal.Segment {
        SegmentJournal.Segment(first: first, last: last, body: Data((0..<bytes).map { UInt8(truncatingIfNeeded: Int(first) &* 31 &+ $0) }))
    }

    private static let thisBoot: UInt128 = 0x1234
    private static let earlierBoot: UInt128 = 0x5678

    private func header(base: UInt64 = 0, boot: UInt128 = thisBoot, syncsEachAppend: Bool = false) -> JournalHeader {
        JournalHeader(salt: 0xABCD, databaseID: 7, baseRevision: base, bootID: boot, syncsEachAppend: syncsEachAppend)
    }

    private var link: JournalLink { JournalLink(databaseID: 7, salt: 0xABCD, previousSalt: 0x99, baseRevision: 0) }

    private func plan(_ path: String, link: JournalLink? = nil, databaseRevision: UInt64 = 0) throws -> JournalRecovery.Plan {
        JournalRecovery.plan(
            for: try SegmentJournal.read(path: path), journal: path, database: "db", link: link ?? self.link,
            databaseRevision: databaseRevision, bootID: Self.thisBoot)
    }

    private func scan(_ path: String) throws -> JournalScan {
        guard case .journal(let scan) = try SegmentJournal.read(path: path) else { throw TestFailure("\(path) is not a journal") }
        return scan
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
        let journal = try SegmentJournal.create(path: path, header: header(), syncInterval: nil)
        try append(written, to: journal)
        #expect(journal.size == UInt64(size(path)))
        let read = try scan(path)
        #expect(read.header == header())
        #expect(read.segments == written)
        #expect(read.damage == nil)
        guard case .use = try plan(path) else { throw TestFailure("a whole journal is not used as it is") }
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }

    @Test func writersRecordsAreReadBackBesideTheSegmentsOutsideTheirContinuity() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("journal")
        let door = WriterIdentity(session: 3, clientName: "door-lock ✓", pid: 41, uid: 1000, gid: 100)
        let fan = WriterIdentity(session: 4, clientName: "", pid: -1, uid: 0, gid: 0)
        let journal = try SegmentJournal.create(path: path, header: header(), syncInterval: nil)
        try journal.append(writers: [door])
        try append([segment(1, 1)], to: journal)
        try journal.append(writers: [fan])
        try append([segment(2, 5, bytes: 600)], to: journal)
        let damagedAt = size(path)
        try append([segment(6, 6)], to: journal)
        try journal.append(writers: [door, fan])
        try append([segment(7, 8)], to: journal)
        journal.close()
        let read = try scan(path)
        #expect(read.segments.map(\.last) == [1, 5, 6, 8])
        #expect(read.writers.map(\.session) == [3, 4, 3, 4])
        #expect(read.writers[0].clientName == "door-lock ✓" && read.writers[0].pid == 41 && read.writers[0].uid == 1000)
        #expect(read.writers[0].gid == 100 && read.writers[1].pid == -1)
        #expect(read.damage == nil)

        // Damage before them: the whole records after it are found across the writers record.
        var contents = try Data(contentsOf: URL(fileURLWithPath: path))
        contents[damagedAt + 30] ^= 0x01
        try contents.write(to: URL(fileURLWithPath: path))
        let damaged = try scan(path)
        #expect(damaged.segments.map(\.last) == [1, 5])
        #expect(damaged.damage?.followingRevisions == 7...8)
    }

    @Test func aWritersRecordWhoseBodyIsNotOneIsNoRecord() {
        let body = JournalWriters.body(of: [WriterIdentity(session: 9, clientName: "x", pid: 1, uid: 2, gid: 3)])
        #expect(body.withUnsafeBytes { JournalWriters.writers(in: $0) }?.map(\.session) == [9])
        #expect(body.dropLast().withUnsafeBytes { JournalWriters.writers(in: $0) } == nil)
        #expect((body + [0]).withUnsafeBytes { JournalWriters.writers(in: $0) } == nil)
        #expect(Data([0xFF, 0xFF, 0xFF, 0xFF]).withUnsafeBytes { JournalWriters.writers(in: $0) } == nil)
    }

    @Test func aTornEndIsCutAndKeptBesideTheJournal() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("journal")
        let journal = try SegmentJournal.create(path: path, header: header(), syncInterval: nil)
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
            guard case .cutTornEnd(let found, let damage) = try plan(path) else { throw TestFailure("a torn end is not cut") }
            #expect(found.segments.map(\.last) == [1, 3])
            #expect(damage.offset == whole && damage.bytes == contents.count - whole)
            let kept = try SegmentJournal.cut(path: path, at: damage.offset)
            #expect(try Data(contentsOf: URL(fileURLWithPath: kept)) == contents.dropFirst(whole))
            #expect(size(path) == whole)
            // Appends go on after the last whole record.
            let reopened = try SegmentJournal.open(path: path, scan: try scan(path), syncInterval: nil)
            try append([segment(4, 4)], to: reopened)
            reopened.close()
            #expect(try scan(path).segments.map(\.last) == [1, 3, 4])
            try FileManager.default.removeItem(atPath: kept)
        }
    }

    @Test(arguments: [false, true])
    func damageBeforeTheEndStopsTheStartNamingTheOffsetAndTheRevisions(zeroed: Bool) throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("journal")
        let journal = try SegmentJournal.create(path: path, header: header(), syncInterval: nil)
        try append([segment(1, 1), segment(2, 3)], to: journal)
        let damagedAt = size(path)
        try append([segment(4, 4, bytes: 600), segment(5, 9), segment(10, 10)], to: journal)
        journal.close()
        var contents = try Data(contentsOf: URL(fileURLWithPath: path))
        if zeroed {
            contents.replaceSubrange(damagedAt + 30..<damagedAt + 542, with: Data(count: 512))
        } else {
            contents[damagedAt + 300] ^= 0x40
        }
        try contents.write(to: URL(fileURLWithPath: path))
        // Written in this boot: no power cut can explain it, zeroed or not.
        guard case .refuse(let problem) = try plan(path) else { throw TestFailure("damage before the end was not refused") }
        #expect(problem.message.contains(path))
        #expect(problem.message.contains("offset \(damagedAt)"))
        #expect(problem.message.contains("revision 4 "))
        #expect(problem.message.contains("revisions 5–10"))
        #expect(problem.message.contains("syncd recover --database db"))
        #expect(problem.remedy == .cut(at: damagedAt))
        // Nothing was changed by looking.
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == contents)
    }

    /// The kernel wrote a page back while the file ended inside it, then a later page: zeros from
    /// the last whole record to the end of its sector (fewer than a sector's worth), then records
    /// that start in the later page. Found by the power-loss tests with pages written back out of
    /// order; a byte changed there instead is damage.
    @Test func aPageWrittenBackWhileTheFileEndedInsideItIsAPowerCutsHole() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("journal")
        let journal = try SegmentJournal.create(path: path, header: header(boot: Self.earlierBoot), syncInterval: nil)
        // The first records end 200 bytes before a sector's end.
        try append([segment(1, 1, bytes: 4096 - 64 - 24 - 200)], to: journal)
        let holeAt = size(path)
        #expect(holeAt % 512 == 312)
        try append([segment(2, 2, bytes: 300), segment(3, 3), segment(4, 5)], to: journal)
        journal.close()
        let complete = try Data(contentsOf: URL(fileURLWithPath: path))
        // The page holding the hole reached the disk when the file ended at it; the next one too.
        var holed = complete
        holed.replaceSubrange(holeAt..<4096, with: Data(count: 4096 - holeAt))
        try holed.write(to: URL(fileURLWithPath: path))
        guard case .cutAfterPowerCut(let found, let damage) = try plan(path) else {
            throw TestFailure("a page written back while the file ended inside it was not cut as a power cut's hole")
        }
        #expect(found.segments.map(\.last) == [1])
        #expect(damage.offset == holeAt && damage.followingRevisions == 3...5)
        // One byte of that run not zero: damage, refused.
        holed[holeAt + 50] = 7
        try holed.write(to: URL(fileURLWithPath: path))
        guard case .refuse = try plan(path) else { throw TestFailure("a changed byte in the hole was not refused") }
    }

    @Test func aHoleAPowerCutLeftIsCutOnlyInAJournalOfAnEarlierBootThatWasNotSyncedEachAppend() throws {
        let directory = try TemporaryDirectory()
        for (boot, syncsEachAppend, isCut) in [
            (Self.earlierBoot, false, true), (Self.thisBoot, false, false), (Self.earlierBoot, true, false),
        ] {
            let path = directory.file("journal-\(boot)-\(syncsEachAppend)")
            let journal = try SegmentJournal.create(
                path: path, header: header(boot: boot, syncsEachAppend: syncsEachAppend), syncInterval: nil)
            try append([segment(1, 1)], to: journal)
            let holeAt = size(path)
            try append([segment(2, 2, bytes: 5000), segment(3, 4)], to: journal)
            journal.close()
            var contents = try Data(contentsOf: URL(fileURLWithPath: path))
            // A page of the second record never reached the disk; the third did.
            contents.replaceSubrange(holeAt..<holeAt + 4096, with: Data(count: 4096))
            try contents.write(to: URL(fileURLWithPath: path))
            switch try plan(path) {
            case .cutAfterPowerCut(let found, let damage):
                #expect(isCut)
                #expect(found.segments.map(\.last) == [1])
                #expect(damage.offset == holeAt && damage.followingRevisions == 3...4)
            case .refuse(let problem):
                #expect(!isCut, "\(problem)")
            default:
                Issue.record("neither cut nor refused")
            }
        }
    }

    @Test func aFileThatIsNotAJournalIsRefusedWithoutChangingIt() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("journal")
        let contents = Data(repeating: 0x41, count: 100)
        try contents.write(to: URL(fileURLWithPath: path))
        guard case .refuse(let problem) = try plan(path) else { throw TestFailure("not refused") }
        #expect(problem.message.contains(path) && problem.message.contains("not a syncd segment journal"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == contents)
    }

    @Test func appendsLeftUnsyncedLongerThanTheIntervalAreSyncedByTheNextAppend() throws {
        let directory = try TemporaryDirectory()
        let journal = try SegmentJournal.create(path: directory.file("journal"), header: header(), syncInterval: .milliseconds(50))
        #expect(journal.unsynced == nil)
        #expect(try !journal.append(first: 1, last: 1, body: Data("a".utf8)).syncedLate)
        let first = try #require(journal.unsynced)
        #expect(first.bytes == 25)
        #expect(try !journal.append(first: 2, last: 2, body: Data("b".utf8)).syncedLate)
        #expect(journal.unsynced?.since == first.since && journal.unsynced?.bytes == 50)
        try journal.sync()
        #expect(journal.unsynced == nil)
        #expect(try !journal.append(first: 3, last: 3, body: Data("c".utf8)).syncedLate)
        Thread.sleep(forTimeInterval: 0.06)
        // The oldest unsynced append is older than the interval: this one syncs before it returns.
        #expect(try journal.append(first: 4, last: 4, body: Data("d".utf8)).syncedLate)
        #expect(journal.unsynced == nil)
        #expect(journal.longestUnsyncedAge >= .milliseconds(50))
    }

    // MARK: The journal under the storage

    private func put(_ revision: UInt64, _ key: String) -> CommittedRevision {
        CommittedRevision(
            revision: revision,
            changes: [.put(Entry(key: key, value: Data("\(revision)".utf8), version: 1, createRevision: revision, modRevision: revision))])
    }

    private func expectRefusal(_ path: String, _ fragments: String...) {
        #expect {
            _ = try Storage(path: path, durability: .normal)
        } throws: { error in
            let text = "\(error)"
            let missing = fragments.filter { !text.contains($0) }
            if !missing.isEmpty { Issue.record("\(text) does not say \(missing)") }
            return missing.isEmpty
        }
    }

    @Test func aJournalWhoseRecordsTheDatabaseHoldsIsReplaced() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let storage = try Storage(path: path, durability: .normal)
        try storage.commit([put(1, "a"), put(2, "b")])
        // As if syncd died between moving the journal into the database and replacing it: the
        // database names the next journal and still accepts this one's salt as the previous.
        let journal = try Data(contentsOf: URL(fileURLWithPath: path + "-segments"))
        let salt = try scan(path + "-segments").header.salt
        try storage.materialize(replacingJournal: true)
        try storage.withWriter { db in
            try db.execute(sql: "UPDATE meta SET value = ? WHERE name = 'journal_previous_salt'", arguments: [Int64(bitPattern: salt)])
        }
        try journal.write(to: URL(fileURLWithPath: path + "-segments"))

        let restarted = try Storage(path: path, durability: .normal)
        let loaded = try restarted.load()
        #expect(loaded.revision == 2)
        #expect(loaded.plainEntries.keys.sorted() == ["a", "b"])
        #expect(size(path + "-segments") == JournalHeader.size)
        try restarted.commit([put(3, "c")])
        #expect(try Storage(path: path, durability: .normal).load().revision == 3)
    }

    @Test func aMissingJournalStopsTheStartAndRecoverStartsANewOneOnlyWhenAsked() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let storage = try Storage(path: path, durability: .normal)
        try storage.commit([put(1, "a")])
        try storage.materialize()
        try storage.commit([put(2, "b")])
        storage.journal.close()
        try FileManager.default.removeItem(atPath: path + "-segments")
        expectRefusal(path, "segment journal \(path)-segments is missing", "after revision 1", "syncd recover --database \(path)")

        let repair = try JournalRepair(databasePath: path)
        #expect(repair.isNeeded)
        #expect(repair.report.contains("dropping it loses: the writes acknowledged after revision 1"))
        _ = try repair.drop()
        #expect(!(try JournalRepair(databasePath: path).isNeeded))
        #expect(try Storage(path: path, durability: .normal).load().revision == 1)
    }

    @Test func aJournalOfAnotherDatabaseStopsTheStart() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let other = directory.file("other.sqlite")
        for file in [path, other] {
            let storage = try Storage(path: file, durability: .normal)
            try storage.commit([put(1, "a")])
            try storage.close()
        }
        try FileManager.default.removeItem(atPath: path + "-segments")
        try FileManager.default.copyItem(atPath: other + "-segments", toPath: path + "-segments")
        expectRefusal(path, "belongs to another database")
    }

    @Test func aDatabaseThatWentBackBehindItsJournalStopsTheStart() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let storage = try Storage(path: path, durability: .normal)
        try storage.commit([put(1, "a")])
        try storage.close()
        // An older copy of the database: as its lost -wal, or a copy put back, would leave it.
        try FileManager.default.copyItem(atPath: path, toPath: directory.file("older.sqlite"))
        let reopened = try Storage(path: path, durability: .normal)
        try reopened.commit([put(2, "b")])
        try reopened.commit([put(3, "c")])
        try reopened.materialize()
        try reopened.commit([put(4, "d")])
        // A clean stop: the journal is moved and replaced by one continuing from revision 4.
        try reopened.close()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        try FileManager.default.copyItem(atPath: directory.file("older.sqlite"), toPath: path)
        expectRefusal(path, "ends at revision 1", "continues from revision 4", "\(path)-wal")
        #expect(try JournalRepair(databasePath: path).report.contains("dropping it loses: revisions 2–4"))
    }

    @Test func anOlderCopyOfTheJournalStopsTheStart() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let storage = try Storage(path: path, durability: .normal)
        try storage.commit([put(1, "a")])
        let older = try Data(contentsOf: URL(fileURLWithPath: path + "-segments"))
        // Replaced at the clean stop; after the next start, one more write.
        try storage.close()
        let reopened = try Storage(path: path, durability: .normal)
        try reopened.commit([put(2, "b")])
        reopened.journal.close()
        try older.write(to: URL(fileURLWithPath: path + "-segments"))
        expectRefusal(path, "is not the one the database names", "older copy")
    }

    @Test func recoverCutsDamageBeforeTheEndOnlyWhenAskedAndSaysWhatIsDropped() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let storage = try Storage(path: path, durability: .normal)
        try storage.commit([put(1, "a")])
        try storage.commit([put(2, "b")])
        try storage.commit([put(3, "c")])
        storage.journal.close()
        var contents = try Data(contentsOf: URL(fileURLWithPath: path + "-segments"))
        let second = JournalHeader.size + (contents.count - JournalHeader.size) / 3
        contents[second + 26] ^= 0xFF
        try contents.write(to: URL(fileURLWithPath: path + "-segments"))
        expectRefusal(path, "damaged at offset \(second)", "revisions 3–3")

        let repair = try JournalRepair(databasePath: path)
        #expect(repair.report.contains("revision 3: put c"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + "-segments")) == contents)
        #expect(try repair.drop().contains("cut \(path)-segments at offset \(second)"))
        let loaded = try Storage(path: path, durability: .normal).load()
        #expect(loaded.revision == 1 && loaded.plainEntries.keys.sorted() == ["a"])
    }
}

/// A check that could not go on, with what was found instead.
private struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
