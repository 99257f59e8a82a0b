import Foundation
import SharedStateWire

/// A key's committed entry as the engine keeps it in memory: the entry's bytes (its key, numbers
/// and value, laid out by ``EntryBytes``) in a cell of an ``EntrySlab``, and that slab, which
/// keeps the bytes alive while the entry is held.
///
/// The entries of an ``EntryTable`` sit side by side in slabs the table's ``EntryArena`` shares
/// out, with no object or `malloc` header each (a put is planned straight into one, see
/// ``EntryCell``); an entry made on its own (``make(_:)``: a transaction's, a restore's) has a
/// slab of one cell, exactly its size.
///
/// `@unchecked Sendable`: a cell's bytes are never written while an entry refers to them (the
/// arena reuses a cell only in a slab nothing else holds).
package struct StoredEntry: @unchecked Sendable {
    /// Keeps ``bytes`` alive.
    let slab: EntrySlab
    /// Where the entry starts, in `slab`'s cells.
    let bytes: UnsafePointer<UInt8>

    init(slab: EntrySlab, bytes: UnsafePointer<UInt8>) {
        self.slab = slab
        self.bytes = bytes
    }

    /// An entry's numbers, as its bytes hold them: LEB128 varints, in this order.
    package struct Numbers: Sendable {
        package var version: UInt64
        package var createRevision: UInt64
        package var modRevision: UInt64
        package var ephemeralSession: UInt64

        var encodedCount: Int {
            EntryBytes.count(version) + EntryBytes.count(createRevision) + EntryBytes.count(modRevision)
                + EntryBytes.count(ephemeralSession)
        }

        /// Writes the numbers at `start`; returns the byte after them.
        func write(to start: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8> {
            var next = start
            next = EntryBytes.write(version, to: next)
            next = EntryBytes.write(createRevision, to: next)
            next = EntryBytes.write(modRevision, to: next)
            return EntryBytes.write(ephemeralSession, to: next)
        }

        /// The numbers written at `start`.
        init(readingFrom start: UnsafePointer<UInt8>) {
            var next = start
            version = EntryBytes.read(&next)
            createRevision = EntryBytes.read(&next)
            modRevision = EntryBytes.read(&next)
            ephemeralSession = EntryBytes.read(&next)
        }

        package init(version: UInt64, createRevision: UInt64, modRevision: UInt64, ephemeralSession: UInt64) {
            self.version = version
            self.createRevision = createRevision
            self.modRevision = modRevision
            self.ephemeralSession = ephemeralSession
        }
    }

    /// The stored form of `entry`, an entry of its own.
    package static func make(_ entry: Entry) -> StoredEntry {
        let numbers = Numbers(
            version: entry.version, createRevision: entry.createRevision, modRevision: entry.modRevision,
            ephemeralSession: entry.ephemeralSession)
        var key = entry.key
        return key.withUTF8 { key in
            entry.value.withUnsafeBytes { value in
                let value = value.assumingMemoryBound(to: UInt8.self)
                let slab = EntrySlab.make(cellSize: EntryBytes.count(key: key.count, value: value.count, numbers: numbers), cellCount: 1)
                return EntryCell(slab: slab, bytes: slab.cells).write(key: key, value: value, numbers: numbers)
            }
        }
    }

    /// How many bytes the entry takes.
    var byteCount: Int { EntryBytes.byteCount(at: bytes) }

    /// The entry's numbers, decoded.
    package var numbers: Numbers { Numbers(readingFrom: EntryBytes.numbers(at: bytes)) }

    /// The session an ephemeral key is bound to; 0 for a key that persists.
    package var ephemeralSession: UInt64 { numbers.ephemeralSession }
    /// How many times the key was put since it was created.
    package var version: UInt64 { numbers.version }
    /// The revision that created the key.
    package var createRevision: UInt64 { numbers.createRevision }
    /// The revision that last put it.
    package var modRevision: UInt64 { numbers.modRevision }

    /// The entry's key.
    var key: String {
        withKeyBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// The entry, as the rest of syncd and the wire know it; `key` saves decoding the key again
    /// when the caller has it. Without `withValue`, its value is left empty: a copy saved where
    /// only the numbers count (planning a put or a delete).
    package func entry(key: String? = nil, withValue: Bool = true) -> Entry {
        let numbers = self.numbers
        let value = withValue ? withKeyAndValueBytes { _, value in Data(buffer: value) } : Data()
        return Entry(
            key: key ?? self.key,
            value: value,
            version: numbers.version,
            createRevision: numbers.createRevision,
            modRevision: numbers.modRevision,
            ephemeralSession: numbers.ephemeralSession
        )
    }

    /// Whether the value's bytes are those of `value`.
    func hasValue(_ value: Data) -> Bool {
        withKeyAndValueBytes { _, stored in
            guard stored.count == value.count else { return false }
            return value.withUnsafeBytes { other in
                other.isEmpty || memcmp(stored.baseAddress!, other.baseAddress!, other.count) == 0
            }
        }
    }

    /// Calls `body` with the key's UTF-8 bytes and the value's bytes, valid only inside it.
    package func withKeyAndValueBytes<R>(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try withExtendedLifetime(slab) { try body(EntryBytes.key(at: bytes), EntryBytes.value(at: bytes)) }
    }

    /// Whether this is `other`, the same stored bytes, not only equal ones.
    func isStored(as other: StoredEntry) -> Bool {
        bytes == other.bytes
    }

    /// Calls `body` with the key's UTF-8 bytes, valid only inside it.
    func withKeyBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        withExtendedLifetime(slab) { body(EntryBytes.key(at: bytes)) }
    }
}
