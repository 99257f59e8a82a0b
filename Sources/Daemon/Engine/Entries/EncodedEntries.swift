/// Entries as their ``EntryBytes``, one after another in one buffer: how start-up hands a batch
/// of rows read from the database to the ``EntryTableBuilder``, which copies each into the
/// table's arena, so that reading a million rows makes no allocation per row.
package struct EncodedEntries: Sendable {
    private var bytes: [UInt8] = []
    /// Where each entry ends in `bytes`.
    private var ends: [Int] = []

    /// No entries, with room for about `byteCount` bytes of them.
    package init(reservingBytes byteCount: Int = 0) {
        bytes.reserveCapacity(byteCount)
    }

    /// How many entries it holds.
    package var count: Int { ends.count }

    /// How many bytes its entries take.
    package var byteCount: Int { bytes.count }

    /// Adds an entry holding copies of `key` (UTF-8), `value` and `numbers`.
    package mutating func append(key: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, numbers: StoredEntry.Numbers) {
        let count = EntryBytes.count(key: key.count, value: value.count, numbers: numbers)
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: count))
        bytes.withUnsafeMutableBufferPointer { buffer in
            EntryBytes.write(key: key, value: value, numbers: numbers, to: buffer.baseAddress! + start)
        }
        ends.append(start + count)
    }

    /// Calls `body` with each entry's bytes and their count, in the order they were added.
    func forEach(_ body: (UnsafePointer<UInt8>, Int) -> Void) {
        bytes.withUnsafeBufferPointer { buffer in
            var start = 0
            for end in ends {
                body(buffer.baseAddress! + start, end - start)
                start = end
            }
        }
    }
}
