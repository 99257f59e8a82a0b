import Foundation
import SyncEngine

/// What a segment journal's bytes hold: its header, its whole records in order, and, when a
/// record is not whole, where and what the damage is and whether whole records follow it.
///
/// A record is a header of 24 bytes (little-endian: CRC-32C, body length, first and last
/// revision) and its body; the checksum covers the journal's salt, the rest of the record's
/// header and the body. Records are continuous: each starts at the revision after the last one's
/// (the first at the journal's base revision + 1). A record of revisions 0 through 0 is not a
/// commit group but the writers that the groups after it name (``JournalWriters``), outside the
/// continuity. Reading stops at the first record that is not
/// whole and continuous; what lies after it is then searched, byte by byte, for whole records of
/// later revisions: their presence is what tells damage in the middle of the journal, which
/// stops the start, from a record torn at its end, which is cut.
package struct JournalScan: Sendable {
    /// One commit group: its consecutive revisions `first` through `last`, as a ``LogSegment`` body.
    package struct Segment: Sendable, Equatable {
        package let first: UInt64
        package let last: UInt64
        package let body: Data
    }

    /// Where the records stop being whole, and what comes after.
    package struct Damage: Sendable {
        /// The offset of the first record that is not whole.
        package var offset: Int
        /// The bytes from there to the end of the file.
        package var bytes: Int
        /// The revision that record should have started at.
        package var expectedRevision: UInt64
        /// Whole records found after the damage, each with its offset, continuous among themselves.
        package var following: [(offset: Int, segment: Segment)] = []
        /// Whether the bytes between ``offset`` and the first following record (or the end)
        /// look like pages that never reached the disk, as a power cut leaves them: a whole
        /// sector (512 bytes at a multiple of 512 in the file) of zeros, or zeros from ``offset``
        /// to the end of its sector (a page written back while the file ended there, a later page
        /// written too).
        package var looksUnwritten: Bool

        /// The revisions the following records hold.
        package var followingRevisions: ClosedRange<UInt64>? {
            guard let first = following.first, let last = following.last else { return nil }
            return first.segment.first...last.segment.last
        }
    }

    package var header: JournalHeader
    /// The whole, continuous records after the header, in order.
    package var segments: [Segment] = []
    /// The writers the whole records name (``JournalWriters``), in order.
    package var writers: [WriterIdentity] = []
    /// Where they end: the offset of the next record.
    package var end: Int
    /// Nil when the file ends where the records do.
    package var damage: Damage?

    static let recordHeaderSize = 24
    /// The smallest unit a disk writes whole.
    static let sectorSize = 512

    /// Reads `file`, which starts with `header`.
    init(_ file: UnsafeRawBufferPointer, header: JournalHeader) {
        self.header = header
        var offset = header.encodedSize
        var expected: UInt64? = header.version == 1 ? nil : header.baseRevision &+ 1
        while let record = Self.record(in: file, at: offset, salt: header.salt, expected: expected) {
            switch record {
            case .segment(let segment):
                segments.append(segment)
                expected = segment.last &+ 1
            case .writers(let named, _):
                writers += named
            }
            offset += record.size
        }
        end = offset
        guard offset < file.count else { return }
        let expectedRevision = expected ?? 1
        var damage = Damage(offset: offset, bytes: file.count - offset, expectedRevision: expectedRevision, looksUnwritten: false)
        // Any later record: damage may have changed the revisions the next one names.
        var search = offset + 1
        while search + Self.recordHeaderSize <= file.count {
            if case .segment(let segment) = Self.record(in: file, at: search, salt: header.salt, expected: nil),
                segment.first >= expectedRevision
            {
                var next = search
                var expected = segment.first
                // The chain of whole records from there; writers records within it are skipped.
                while let record = Self.record(in: file, at: next, salt: header.salt, expected: expected) {
                    if case .segment(let segment) = record {
                        damage.following.append((next, segment))
                        expected = segment.last &+ 1
                    }
                    next += record.size
                }
                break
            }
            search += 1
        }
        let gapEnd = damage.following.first?.offset ?? file.count
        let endOfSector = (offset / Self.sectorSize + 1) * Self.sectorSize
        if endOfSector <= gapEnd {
            damage.looksUnwritten = UnsafeRawBufferPointer(rebasing: file[offset..<endOfSector]).allSatisfy { $0 == 0 }
        }
        var sector = (offset + Self.sectorSize - 1) / Self.sectorSize * Self.sectorSize
        while sector + Self.sectorSize <= gapEnd, !damage.looksUnwritten {
            damage.looksUnwritten = UnsafeRawBufferPointer(rebasing: file[sector..<sector + Self.sectorSize]).allSatisfy { $0 == 0 }
            sector += Self.sectorSize
        }
        self.damage = damage
    }

    /// The whole records at the start of `bytes`, which hold records only (a run of them a row
    /// of `changes` names, see ``SealedJournals``): the commit groups in order, skipping writers
    /// records, and how many bytes the whole records take (`bytes.count` when all are whole).
    static func records(in bytes: UnsafeRawBufferPointer, salt: UInt64) -> (segments: [Segment], wholeBytes: Int) {
        var segments: [Segment] = []
        var offset = 0
        while let record = record(in: bytes, at: offset, salt: salt, expected: nil) {
            if case .segment(let segment) = record { segments.append(segment) }
            offset += record.size
        }
        return (segments, offset)
    }

    /// One whole record: a commit group, or the writers the groups after it name.
    private enum Record {
        case segment(Segment)
        case writers([WriterIdentity], bodyBytes: Int)

        /// Its bytes in the file, header included.
        var size: Int {
            switch self {
            case .segment(let segment): JournalScan.recordHeaderSize + segment.body.count
            case .writers(_, let bodyBytes): JournalScan.recordHeaderSize + bodyBytes
            }
        }
    }

    /// The whole record at `offset`, if one starts there and, when `expected` is given, is a
    /// writers record or a group starting at that revision.
    private static func record(in file: UnsafeRawBufferPointer, at offset: Int, salt: UInt64, expected: UInt64?) -> Record? {
        guard file.count - offset >= recordHeaderSize else { return nil }
        let header = UnsafeRawBufferPointer(rebasing: file[offset..<offset + recordHeaderSize])
        let length = Int(UInt32(littleEndianBytes: header, at: 4))
        let first = UInt64(littleEndian: header.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        let last = UInt64(littleEndian: header.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
        let bodyStart = offset + recordHeaderSize
        let isWriters = first == JournalWriters.revision && last == JournalWriters.revision
        guard first <= last, first != 0 || isWriters, file.count - bodyStart >= length else { return nil }
        if let expected, first != expected, !isWriters { return nil }
        let body = UnsafeRawBufferPointer(rebasing: file[bodyStart..<bodyStart + length])
        guard SegmentJournal.checksum(salt: salt, header: header, body: body) == UInt32(littleEndianBytes: header, at: 0) else {
            return nil
        }
        guard isWriters else { return .segment(Segment(first: first, last: last, body: Data(body))) }
        return JournalWriters.writers(in: body).map { .writers($0, bodyBytes: length) }
    }
}
