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
