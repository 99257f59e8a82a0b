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

/// The slabs an ``EntryTable``'s entries are in, by number: what turns an ``EntryHandle`` into
/// the entry's bytes.
///
/// Shared, not copied, by every copy of the table's ``KeyOrder``: a copy read without the
/// engine's lock holds the slabs its handles name, and, as long as it is held, the
/// ``EntryArena`` neither changes these in place (it copies them first) nor reuses a cell of any
/// of their slabs, since none of them is then held only here.
///
/// Its slots are the object's own tail-allocated elements, read through a pointer: read for
/// every key the index and the order compare, an array in a class's `var` cost a run-time
/// exclusivity check each time. It does not grow: ``copy(minimumCapacity:)`` makes a larger one.
///
/// Changed only by the arena, and only while nothing else holds it: what makes ``KeyOrder``,
/// which holds it, `@unchecked Sendable` (a `ManagedBuffer` cannot be `Sendable` itself).
final class EntrySlabs: ManagedBuffer<Int, EntrySlabs.Slot> {
    /// A slab, and where its cells are and how large each is: read for every handle, without
    /// touching the slab object.
    struct Slot {
        var slab: EntrySlab?
        var cells: UnsafeMutablePointer<UInt8>?
        var cellSize: Int
    }

    /// Room for `capacity` slabs, numbers 0 (never used) to `capacity - 1`, none there yet.
    static func make(capacity: Int = 8) -> EntrySlabs {
        let made = create(minimumCapacity: capacity) { _ in capacity }
        made.withUnsafeMutablePointerToElements { $0.initialize(repeating: Slot(slab: nil, cells: nil, cellSize: 0), count: capacity) }
        return unsafeDowncast(made, to: EntrySlabs.self)
    }

    deinit {
        withUnsafeMutablePointers { capacity, slots in _ = slots.deinitialize(count: capacity.pointee) }
    }

    /// How many slab numbers it has room for.
    var slotCount: Int { withUnsafeMutablePointerToHeader { $0.pointee } }

    /// A copy holding the same slabs, with room for at least `minimumCapacity`.
    func copy(minimumCapacity: Int = 0) -> EntrySlabs {
        let count = slotCount
        let copy = EntrySlabs.make(capacity: max(count, minimumCapacity))
        withUnsafeMutablePointerToElements { slots in
            copy.withUnsafeMutablePointerToElements { $0.update(from: slots, count: count) }
        }
        return copy
    }

    /// Where the entry `handle` names starts.
    @inline(__always)
    func bytes(_ handle: EntryHandle) -> UnsafePointer<UInt8> {
        withUnsafeMutablePointerToElements { slots in
            let slot = slots + handle.slab
            return UnsafePointer(slot.pointee.cells.unsafelyUnwrapped + handle.cell * slot.pointee.cellSize)
        }
    }

    /// The entry `handle` names, holding its slab.
    func entry(_ handle: EntryHandle) -> StoredEntry {
        let slab = withUnsafeMutablePointerToElements { $0[handle.slab].slab.unsafelyUnwrapped }
        return StoredEntry(slab: slab, bytes: bytes(handle))
    }

    /// The handle of `entry`, when its cell is one of these slabs'.
    func handle(of entry: StoredEntry) -> EntryHandle? {
        let size = entry.slab.size
        guard size.number > 0, size.number < slotCount else { return nil }
        return withUnsafeMutablePointerToElements { slots in
            let slot = slots + size.number
            guard slot.pointee.slab === entry.slab, let cells = slot.pointee.cells else { return nil }
            return EntryHandle(slab: size.number, cell: (UnsafeMutablePointer(mutating: entry.bytes) - cells) / size.cellSize)
        }
    }

    /// The key of the entry `handle` names, valid while this holds its slab.
    @inline(__always)
    func key(_ handle: EntryHandle) -> UnsafeBufferPointer<UInt8> {
        EntryBytes.key(at: bytes(handle))
    }

    /// How many slabs it holds.
    var count: Int {
        withUnsafeMutablePointers { capacity, slots in
            (0..<capacity.pointee).reduce(0) { $0 + (slots[$1].slab == nil ? 0 : 1) }
        }
    }

    /// Whether only this holds slab `number`: no entry made from it is held anywhere.
    func holdsAlone(_ number: Int) -> Bool {
        withUnsafeMutablePointerToElements { isKnownUniquelyReferenced(&$0[number].slab) }
    }

    /// Puts `slab` under `number`, which is below ``slotCount``.
    func set(_ slab: EntrySlab?, at number: Int) {
        precondition(number > 0 && number < slotCount, "slab number \(number) out of range")
        withUnsafeMutablePointerToElements { slots in
            slots[number] = Slot(slab: slab, cells: slab?.cells, cellSize: slab?.size.cellSize ?? 0)
        }
    }
}

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

/// A cell for an entry not yet written: one an ``EntryTable`` gave out
/// (``EntryTable/makeCell(byteCount:)``, where planning writes a put), or the one cell of an
/// entry's own slab (``StoredEntry/make(_:)``).
///
/// `@unchecked Sendable`: the cell is written once, by whoever took it, before the entry it
/// becomes is handed to anyone.
struct EntryCell: @unchecked Sendable {
    let slab: EntrySlab
    let bytes: UnsafeMutablePointer<UInt8>

    /// Writes the entry, which must take the cell's byte count, and returns it.
    func write(key: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, numbers: StoredEntry.Numbers) -> StoredEntry {
        EntryBytes.write(key: key, value: value, numbers: numbers, to: bytes)
        return StoredEntry(slab: slab, bytes: bytes)
    }
}

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
