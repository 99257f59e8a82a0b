import Foundation
import SharedStateWire

/// A key's committed entry as the engine keeps it in memory: one allocation holding the entry's
/// numbers and its value's bytes, where an ``Entry`` takes a `Data` storage object and a separate
/// buffer for the bytes. With a million keys that is most of syncd's memory, and of its start-up
/// time. The key is the dictionary's.
///
/// `@unchecked Sendable`: the buffer is never written after ``make(value:version:createRevision:modRevision:ephemeralSession:)``.
struct StoredEntry: @unchecked Sendable {
    private let buffer: ManagedBuffer<Header, UInt8>

    struct Header {
        var version: UInt64
        var createRevision: UInt64
        var modRevision: UInt64
        var ephemeralSession: UInt64
        var valueCount: Int
    }

    /// An entry holding a copy of `value`.
    static func make(
        value: UnsafeRawBufferPointer,
        version: UInt64,
        createRevision: UInt64,
        modRevision: UInt64,
        ephemeralSession: UInt64
    ) -> StoredEntry {
        let buffer = ManagedBuffer<Header, UInt8>.create(minimumCapacity: value.count) { _ in
            Header(
                version: version,
                createRevision: createRevision,
                modRevision: modRevision,
                ephemeralSession: ephemeralSession,
                valueCount: value.count
            )
        }
        buffer.withUnsafeMutablePointerToElements { elements in
            if let base = value.baseAddress { elements.initialize(from: base.assumingMemoryBound(to: UInt8.self), count: value.count) }
        }
        return StoredEntry(buffer: buffer)
    }

    /// The stored form of `entry`.
    static func make(_ entry: Entry) -> StoredEntry {
        entry.value.withUnsafeBytes { value in
            make(
                value: value,
                version: entry.version,
                createRevision: entry.createRevision,
                modRevision: entry.modRevision,
                ephemeralSession: entry.ephemeralSession
            )
        }
    }

    /// The session an ephemeral key is bound to; 0 for a key that persists.
    var ephemeralSession: UInt64 { buffer.header.ephemeralSession }

    /// The entry, as the rest of syncd and the wire know it.
    func entry(key: String) -> Entry {
        let header = buffer.header
        let value = buffer.withUnsafeMutablePointerToElements { Data(bytes: $0, count: header.valueCount) }
        return Entry(
            key: key,
            value: value,
            version: header.version,
            createRevision: header.createRevision,
            modRevision: header.modRevision,
            ephemeralSession: header.ephemeralSession
        )
    }
}
