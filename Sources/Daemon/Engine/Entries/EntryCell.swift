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
