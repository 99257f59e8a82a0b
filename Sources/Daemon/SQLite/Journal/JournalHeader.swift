import Foundation

/// The first bytes of a segment journal: which database it continues, from which revision, under
/// which salt, written in which boot of the machine.
///
/// Layout (64 bytes, little-endian): magic `SYNCSEG2`, salt, database id, base revision, boot id
/// (16 bytes), flags (bit 0: each append was synced), 8 reserved bytes, CRC-32C of the 60 bytes
/// before it. The database records the same salt, id and base (``JournalLink``), so each names
/// the other: a journal of another database, an older one, or a database that went back behind
/// its journal is recognised at start-up instead of being served.
///
/// Journals of syncd before the link (`SYNCSEG1`, 16 bytes: magic and salt) are still read, once,
/// at the start that moves them into the database and replaces them.
package struct JournalHeader: Sendable, Equatable {
    /// The salt every record's checksum starts from: records of an earlier journal at the same
    /// place never read as this one's.
    package var salt: UInt64
    /// The database this journal continues (its `meta` row `database_id`); 0 in a `SYNCSEG1` journal.
    package var databaseID: UInt64
    /// The database's last revision when this journal was started: its first record is the next.
    package var baseRevision: UInt64
    /// The machine's boot id when the journal was started (`/proc/sys/kernel/random/boot_id`).
    package var bootID: UInt128
    /// Whether each append was synced before it was acknowledged (`--durability full`).
    package var syncsEachAppend: Bool
    /// 1 for a `SYNCSEG1` journal, which has no link; 2 otherwise.
    package var version: Int = 2

    static let magic = Array("SYNCSEG2".utf8)
    static let legacyMagic = Array("SYNCSEG1".utf8)
    /// The size of a header.
    static let size = 64
    static let legacySize = 16

    /// The header's bytes.
    var bytes: [UInt8] {
        var bytes = Self.magic
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
        append(salt)
        append(databaseID)
        append(baseRevision)
        append(UInt64(truncatingIfNeeded: bootID))
        append(UInt64(truncatingIfNeeded: bootID >> 64))
        append(UInt32(syncsEachAppend ? 1 : 0))
        append(UInt64(0))
        append(bytes.withUnsafeBytes { CRC32C.checksum($0) })
        return bytes
    }

    /// What the first bytes of a file say.
    enum Parsed {
        case header(JournalHeader)
        /// Fewer bytes than a header.
        case short
        /// Not a journal's magic.
        case notAJournal
        /// A journal's magic, but the header's checksum fails.
        case damaged
    }

    /// Reads the header at the start of `file`.
    static func parse(_ file: UnsafeRawBufferPointer) -> Parsed {
        if file.count >= legacyMagic.count, file.prefix(legacyMagic.count).elementsEqual(legacyMagic) {
            guard file.count >= legacySize else { return .short }
            let salt = UInt64(littleEndian: file.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            return .header(JournalHeader(salt: salt, databaseID: 0, baseRevision: 0, bootID: 0, syncsEachAppend: false, version: 1))
        }
        guard file.count >= size else {
            return file.prefix(magic.count).elementsEqual(magic.prefix(min(file.count, magic.count))) ? .short : .notAJournal
        }
        guard file.prefix(magic.count).elementsEqual(magic) else { return .notAJournal }
        func word(_ offset: Int) -> UInt64 { UInt64(littleEndian: file.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) }
        let crc = UInt32(littleEndian: file.loadUnaligned(fromByteOffset: 60, as: UInt32.self))
        guard CRC32C.checksum(UnsafeRawBufferPointer(rebasing: file[0..<60])) == crc else { return .damaged }
        let flags = UInt32(littleEndian: file.loadUnaligned(fromByteOffset: 48, as: UInt32.self))
        return .header(
            JournalHeader(
                salt: word(8), databaseID: word(16), baseRevision: word(24), bootID: UInt128(word(32)) | UInt128(word(40)) << 64,
                syncsEachAppend: flags & 1 != 0))
    }

    /// The size of this header in its file.
    var encodedSize: Int { version == 1 ? Self.legacySize : Self.size }

    /// This boot of the machine: the kernel's boot id, which changes at every boot; 0 when it
    /// cannot be read. Debug builds take `SYNCD_BOOT_ID` instead when it is set, so that a test
    /// can start syncd as after a reboot (a power cut on Tests/PowerLoss/lossyfs.py).
    static let currentBootID: UInt128 = {
        var text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)
        #if FAILPOINTS
            if let simulated = ProcessInfo.processInfo.environment["SYNCD_BOOT_ID"] { text = simulated }
        #endif
        guard let text else { return 0 }
        let hex = text.filter(\.isHexDigit)
        guard hex.count == 32, let high = UInt64(hex.prefix(16), radix: 16), let low = UInt64(hex.suffix(16), radix: 16) else { return 0 }
        return UInt128(high) << 64 | UInt128(low)
    }()
}
