/// Where an ``EntryTable`` keeps an entry: a cell of one of its ``EntrySlabs``, in 4 bytes, so
/// that the key index and the key order take 4 bytes an entry instead of a reference's 8.
///
/// The slab's number in the upper 22 bits (numbers start at 1, so no handle is 0), the cell's in
/// the lower 10.
struct EntryHandle: Hashable, Sendable {
    let raw: UInt32

    static let cellBits: UInt32 = 10
    /// The most cells a slab can have.
    static let cellLimit = 1 << cellBits
    /// The most slabs there can be, number 0 unused.
    static let slabLimit = 1 << (32 - cellBits)

    init(slab: Int, cell: Int) {
        raw = UInt32(truncatingIfNeeded: slab) << Self.cellBits | UInt32(truncatingIfNeeded: cell)
    }

    init(raw: UInt32) {
        self.raw = raw
    }

    var slab: Int { Int(raw >> Self.cellBits) }
    var cell: Int { Int(raw & (UInt32(Self.cellLimit) - 1)) }
}
