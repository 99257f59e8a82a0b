import CRC32CInstruction

/// CRC-32C (Castagnoli), the checksum of each record of the ``SegmentJournal``: it tells a
/// whole record from one a crash cut short or a disk damaged.
///
/// With the processor's instruction where it has one (SSE 4.2, ARMv8's CRC extension): eight
/// bytes a step in one instruction, not the eight table lookups of the way the others take (D33).
enum CRC32C {
    /// The checksum of `bytes`, continuing from `crc` (the checksum of what came before them; 0
    /// to start).
    static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        guard hasInstruction, let base = bytes.baseAddress else { return tableChecksum(bytes, continuing: crc) }
        return crc32c_instruction_checksum(base, bytes.count, crc)
    }

    /// Whether this processor computes CRC-32C itself.
    static let hasInstruction = crc32c_instruction_available() != 0

    /// ``checksum(_:continuing:)`` without the instruction: table-driven, eight bytes a step
    /// ("slicing by 8"), for processors that have neither instruction (D33).
    static func tableChecksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        var crc = ~crc
        var index = 0
        let count = bytes.count
        tables.withUnsafeBufferPointer { table in
            while count - index >= 8 {
                let low = UInt32(littleEndianBytes: bytes, at: index) ^ crc
                let high = UInt32(littleEndianBytes: bytes, at: index + 4)
                crc =
                    table[7 * 256 + Int(low & 0xFF)] ^ table[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ table[5 * 256 + Int((low >> 16) & 0xFF)] ^ table[4 * 256 + Int(low >> 24)]
                    ^ table[3 * 256 + Int(high & 0xFF)] ^ table[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ table[1 * 256 + Int((high >> 16) & 0xFF)] ^ table[Int(high >> 24)]
                index += 8
            }
            while index < count {
                crc = table[Int((crc ^ UInt32(bytes[index])) & 0xFF)] ^ (crc >> 8)
                index += 1
            }
        }
        return ~crc
    }

    /// Eight tables of 256: the first is the byte-at-a-time table of the reflected polynomial,
    /// each next one that table applied once more.
    private static let tables: [UInt32] = {
        let polynomial: UInt32 = 0x82F6_3B78
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ polynomial : crc >> 1 }
            tables[byte] = crc
        }
        for slice in 1..<8 {
            for byte in 0..<256 {
                let previous = tables[(slice - 1) * 256 + byte]
                tables[slice * 256 + byte] = tables[Int(previous & 0xFF)] ^ (previous >> 8)
            }
        }
        return tables
    }()
}

extension UInt32 {
    /// The four bytes of `bytes` at `offset`, read as a little-endian number.
    init(littleEndianBytes bytes: UnsafeRawBufferPointer, at offset: Int) {
        self = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }
}
