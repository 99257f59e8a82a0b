import Foundation
import SharedStateWire

/// A key's committed entry as the engine keeps it in memory: one allocation holding the entry's
/// numbers, its key's bytes and its value's bytes, where an ``Entry`` takes a `Data` storage
/// object and a separate buffer for the value, and a dictionary slot for the key. With a million
/// keys that is most of syncd's memory, and of its start-up time.
///
/// `@unchecked Sendable`: the buffer is never written after it is made.
package struct StoredEntry: @unchecked Sendable {
    private let buffer: ManagedBuffer<Header, UInt8>

    private struct Header {
        var keyCount: UInt32
        var valueCount: UInt32
        var version: UInt64
        var createRevision: UInt64
        var modRevision: UInt64
        var ephemeralSession: UInt64
    }

    private init(buffer: ManagedBuffer<Header, UInt8>) {
        self.buffer = buffer
    }

    /// An entry holding copies of `key` (UTF-8) and of `value`.
    package static func make(
        key: UnsafeRawBufferPointer,
        value: UnsafeRawBufferPointer,
        version: UInt64,
        createRevision: UInt64,
        modRevision: UInt64,
        ephemeralSession: UInt64
    ) -> StoredEntry {
        let buffer = ManagedBuffer<Header, UInt8>.create(minimumCapacity: key.count + value.count) { _ in
            Header(
                keyCount: UInt32(key.count),
                valueCount: UInt32(value.count),
                version: version,
                createRevision: createRevision,
                modRevision: modRevision,
                ephemeralSession: ephemeralSession
            )
        }
        buffer.withUnsafeMutablePointerToElements { elements in
            if let base = key.baseAddress { elements.initialize(from: base.assumingMemoryBound(to: UInt8.self), count: key.count) }
            if let base = value.baseAddress {
                (elements + key.count).initialize(from: base.assumingMemoryBound(to: UInt8.self), count: value.count)
            }
        }
        return StoredEntry(buffer: buffer)
    }

    /// The stored form of `entry`.
    package static func make(_ entry: Entry) -> StoredEntry {
        var key = entry.key
        return key.withUTF8 { key in
            entry.value.withUnsafeBytes { value in
                make(
                    key: UnsafeRawBufferPointer(key),
                    value: value,
                    version: entry.version,
                    createRevision: entry.createRevision,
                    modRevision: entry.modRevision,
                    ephemeralSession: entry.ephemeralSession
                )
            }
        }
    }

    /// The entry's numbers. Read through a pointer: `buffer.header`, a class's stored property,
    /// would check exclusive access at run time on every read, and the key order's search reads
    /// a key's length once per comparison.
    private var header: Header {
        buffer.withUnsafeMutablePointerToHeader { $0.pointee }
    }

    /// The session an ephemeral key is bound to; 0 for a key that persists.
    package var ephemeralSession: UInt64 { header.ephemeralSession }
    /// How many times the key was put since it was created.
    package var version: UInt64 { header.version }
    /// The revision that created the key.
    package var createRevision: UInt64 { header.createRevision }
    /// The revision that last put it.
    package var modRevision: UInt64 { header.modRevision }

    /// The entry's key.
    var key: String {
        withKeyBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// The entry, as the rest of syncd and the wire know it; `key` saves decoding the key again
    /// when the caller has it. Without `withValue`, its value is left empty: a copy saved where
    /// only the numbers count (planning a put or a delete).
    package func entry(key: String? = nil, withValue: Bool = true) -> Entry {
        let header = self.header
        let value =
            withValue
            ? buffer.withUnsafeMutablePointerToElements { Data(bytes: $0 + Int(header.keyCount), count: Int(header.valueCount)) } : Data()
        return Entry(
            key: key ?? self.key,
            value: value,
            version: header.version,
            createRevision: header.createRevision,
            modRevision: header.modRevision,
            ephemeralSession: header.ephemeralSession
        )
    }

    /// Whether the value's bytes are those of `value`.
    func hasValue(_ value: Data) -> Bool {
        let header = self.header
        guard Int(header.valueCount) == value.count else { return false }
        return buffer.withUnsafeMutablePointerToElements { elements in
            value.withUnsafeBytes { other in
                other.isEmpty || memcmp(elements + Int(header.keyCount), other.baseAddress!, other.count) == 0
            }
        }
    }

    /// Calls `body` with the key's UTF-8 bytes and the value's bytes, valid only inside it.
    package func withKeyAndValueBytes<R>(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        let header = self.header
        return try buffer.withUnsafeMutablePointerToElements { elements in
            try body(
                UnsafeBufferPointer(start: elements, count: Int(header.keyCount)),
                UnsafeBufferPointer(start: elements + Int(header.keyCount), count: Int(header.valueCount)))
        }
    }

    /// Calls `body` with the key's UTF-8 bytes, valid only inside it.
    func withKeyBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        let count = Int(header.keyCount)
        return buffer.withUnsafeMutablePointerToElements { body(UnsafeBufferPointer(start: $0, count: count)) }
    }
}
