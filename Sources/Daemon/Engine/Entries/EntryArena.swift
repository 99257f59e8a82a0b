/// Shares out the cells an ``EntryTable`` keeps its entries in, and takes them back: an
/// allocator of its own, since a million entries each in an object of its own paid 16 bytes of
/// object header and 8 of `malloc` header, and rounding to 16, on about 120 bytes of entry.
///
/// An entry of up to ``largestCellSize`` bytes goes in a cell of the smallest size class that
/// fits it (4-byte steps up to 256 bytes, then 16 steps to each doubling: at most 3 bytes or
/// 6% unused), in a slab of such cells, of 4 KB for a class's first slab, twice the size for
/// each next, up to 64 KB; a larger one gets a slab of its own, exactly its size. A cell given back is
/// reused for the next entry of its class, but only once no ``StoredEntry`` made from its slab
/// and no copy of the table's ``EntrySlabs`` is held anywhere: a reader may still be reading
/// the entry it held, from a list, a watch's snapshot or a copy of the key order. Until then
/// the arena takes other cells, or a new slab. A slab whose cells are all given back leaves the
/// table, and its memory goes once its last reader lets go.
///
/// Everything here happens under the engine's lock (as every change to the table does).
struct EntryArena: Sendable {
    /// The largest entry that shares a slab.
    static let largestCellSize = 4096
    /// How large a class's first slab of shared cells is, and its largest, about.
    static let firstSlabByteCount = 4 << 10
    static let slabByteCount = 64 << 10
    /// How many slabs with room an allocation looks at before it makes a new one.
    private static let slabsTried = 8

    /// What the arena keeps of one slab.
    private struct Slab {
        /// Its size class; -1 for a slab of its own (or none: a free number).
        var sizeClass: Int16 = -1
        /// How many cells it has, how many were ever taken, and how many hold an entry.
        var cellCount: UInt16 = 0
        var usedCells: UInt16 = 0
        var liveCells: UInt16 = 0
        /// Cells given back since they were taken.
        var freedCells: [UInt16] = []
        /// Its place in its class's `open` list; -1 when not there.
        var openPlace: Int32 = -1

        /// Whether a cell of it can be taken without reusing one given back.
        var hasUntakenCells: Bool { usedCells < cellCount }
    }

    /// By slab number (number 0 is never given: no handle is 0).
    private var slabRecords: [Slab] = [Slab()]
    /// By size class: the slabs that have cells never taken or given back, latest on top.
    private var open: [[Int32]] = Array(repeating: [], count: classCount)
    /// By size class: how many slabs it was given.
    private var slabsMade: [Int] = Array(repeating: 0, count: classCount)
    /// Slab numbers free to be given again.
    private var freeNumbers: [Int32] = []

    private static let classCount = 64 + 4 * 16

    /// The size class of an entry of `byteCount` bytes, and its cells' size; nil above
    /// ``largestCellSize``.
    static func sizeClass(of byteCount: Int) -> (index: Int, cellSize: Int)? {
        if byteCount <= 256 {
            let cellSize = max(4, (byteCount + 3) & ~3)
            return (cellSize / 4 - 1, cellSize)
        }
        guard byteCount <= largestCellSize else { return nil }
        // 2^(bits - 1) < byteCount <= 2^bits, in 16 steps.
        let bits = Int.bitWidth - (byteCount - 1).leadingZeroBitCount
        let step = 1 << (bits - 5)
        let cellSize = (byteCount + step - 1) & ~(step - 1)
        return (64 + (bits - 9) * 16 + (cellSize - (1 << (bits - 1))) / step - 1, cellSize)
    }

    /// A cell for an entry of `byteCount` bytes, in one of `slabs`.
    mutating func allocate(_ byteCount: Int, in slabs: inout EntrySlabs) -> EntryHandle {
        guard let (sizeClass, cellSize) = Self.sizeClass(of: byteCount) else {
            let number = makeSlab(cellSize: byteCount, cellCount: 1, sizeClass: -1, in: &slabs)
            return take(cell: 0, of: number)
        }
        // Cells given back can be written only while nothing but the table holds their slab.
        let mayReuse = isKnownUniquelyReferenced(&slabs)
        var tried = 0
        var place = open[sizeClass].count - 1
        while place >= 0 && tried < Self.slabsTried {
            let number = Int(open[sizeClass][place])
            if !slabRecords[number].freedCells.isEmpty && mayReuse && slabs.holdsAlone(number) {
                return take(cell: Int(slabRecords[number].freedCells.removeLast()), of: number)
            }
            if slabRecords[number].hasUntakenCells {
                slabRecords[number].usedCells += 1
                return take(cell: Int(slabRecords[number].usedCells) - 1, of: number)
            }
            place -= 1
            tried += 1
        }
        // Small at first, so that a class with a few entries takes little; larger as it has more.
        let byteCount = min(Self.slabByteCount, Self.firstSlabByteCount << min(16, slabsMade[sizeClass]))
        slabsMade[sizeClass] += 1
        let number = makeSlab(
            cellSize: cellSize, cellCount: Self.cellCount(cellSize, slabByteCount: byteCount), sizeClass: sizeClass, in: &slabs)
        slabRecords[number].usedCells = 1
        return take(cell: 0, of: number)
    }

    /// Takes back the cell of `handle`, whose entry the table no longer holds.
    mutating func free(_ handle: EntryHandle, in slabs: inout EntrySlabs) {
        let number = handle.slab
        slabRecords[number].liveCells -= 1
        // A slab of shared cells stays while it is its class's only one with room, so that a key
        // put, deleted and put again does not make a slab each time.
        let sizeClass = Int(slabRecords[number].sizeClass)
        let isOpen = slabRecords[number].openPlace >= 0
        if slabRecords[number].liveCells == 0 && (sizeClass < 0 || open[sizeClass].count > (isOpen ? 1 : 0)) {
            retire(number, in: &slabs)
            return
        }
        slabRecords[number].freedCells.append(UInt16(handle.cell))
        if !isOpen { addOpen(number) }
    }

    private static func cellCount(_ cellSize: Int, slabByteCount: Int) -> Int {
        min(EntryHandle.cellLimit, max(1, slabByteCount / cellSize))
    }

    private mutating func take(cell: Int, of number: Int) -> EntryHandle {
        slabRecords[number].liveCells += 1
        if slabRecords[number].openPlace >= 0, slabRecords[number].freedCells.isEmpty, !slabRecords[number].hasUntakenCells {
            removeOpen(number)
        }
        return EntryHandle(slab: number, cell: cell)
    }

    private mutating func makeSlab(cellSize: Int, cellCount: Int, sizeClass: Int, in slabs: inout EntrySlabs) -> Int {
        let number: Int
        if let free = freeNumbers.popLast() {
            number = Int(free)
        } else {
            number = slabRecords.count
            // 4 M slabs: 16 GB of entries even if each were above 4 KB, beyond any machine syncd
            // holds its state in memory on.
            precondition(number < EntryHandle.slabLimit, "syncd's entries need more than \(EntryHandle.slabLimit) slabs")
            slabRecords.append(Slab())
        }
        if number >= slabs.slotCount {
            slabs = slabs.copy(minimumCapacity: max(number + 1, slabs.slotCount * 2))
        } else if !isKnownUniquelyReferenced(&slabs) {
            slabs = slabs.copy()
        }
        slabs.set(EntrySlab.make(cellSize: cellSize, cellCount: cellCount, number: number), at: number)
        slabRecords[number] = Slab(sizeClass: Int16(sizeClass), cellCount: UInt16(cellCount), usedCells: sizeClass < 0 ? 1 : 0)
        if sizeClass >= 0 { addOpen(number) }
        return number
    }

    private mutating func retire(_ number: Int, in slabs: inout EntrySlabs) {
        if slabRecords[number].openPlace >= 0 { removeOpen(number) }
        if !isKnownUniquelyReferenced(&slabs) { slabs = slabs.copy() }
        slabs.set(nil, at: number)
        slabRecords[number] = Slab()
        freeNumbers.append(Int32(number))
    }

    private mutating func addOpen(_ number: Int) {
        let sizeClass = Int(slabRecords[number].sizeClass)
        slabRecords[number].openPlace = Int32(open[sizeClass].count)
        open[sizeClass].append(Int32(number))
    }

    private mutating func removeOpen(_ number: Int) {
        let sizeClass = Int(slabRecords[number].sizeClass)
        let place = Int(slabRecords[number].openPlace)
        let last = open[sizeClass].removeLast()
        if Int(last) != number {
            open[sizeClass][place] = last
            slabRecords[Int(last)].openPlace = Int32(place)
        }
        slabRecords[number].openPlace = -1
    }
}
