/// Cells of one size, side by side in one allocation, each holding an entry's bytes
/// (``EntryBytes``) or nothing yet: what an ``EntryArena`` shares out, and what a
/// ``StoredEntry`` holds to keep its bytes alive.
///
/// Its tail-allocated bytes stay where they are for the slab's life (it is a heap object), so
/// pointers into ``cells`` are good for as long as the slab is held.
final class EntrySlab: ManagedBuffer<EntrySlabSize, UInt8> {
    /// A slab of `cellCount` cells of `cellSize` bytes, number `number` of an ``EntrySlabs``
    /// (0: of none, an entry's own).
    static func make(cellSize: Int, cellCount: Int, number: Int = 0) -> EntrySlab {
        let made = create(minimumCapacity: cellSize * cellCount) { _ in EntrySlabSize(cellSize: cellSize, number: number) }
        return unsafeDowncast(made, to: EntrySlab.self)
    }

    /// Where the cells start.
    var cells: UnsafeMutablePointer<UInt8> {
        withUnsafeMutablePointerToElements { $0 }
    }

    /// The size of each cell, and the slab's number.
    var size: EntrySlabSize {
        withUnsafeMutablePointerToHeader { $0.pointee }
    }
}

/// How large an ``EntrySlab``'s cells are, and the slab's number in the ``EntrySlabs`` it was
/// made for (0: none, an entry's own).
struct EntrySlabSize {
    let cellSize: Int
    let number: Int
}
