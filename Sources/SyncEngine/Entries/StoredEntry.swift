import Foundation
import SharedStateWire

/// A key's committed entry as the engine keeps it in memory: one allocation holding the entry's
/// numbers, its key's bytes and its value's bytes, where an ``Entry`` takes a `Data` storage
/// object and a separate buffer for the value, and a dictionary slot for the key. With a million
/// keys that is most of syncd's memory, and of its start-up time.
///
/// `@unchecked Sendable`: the buffer is never written after it is made.
package struct StoredEntry: @unchecked Sendable {
    /// The header gives the lengths; the elements hold the entry's numbers (``Numbers``, four
    /// varints, usually 8 to 12 bytes where fixed fields took 32), then the key's bytes, then the
    /// value's. With a million keys of 100-byte values, that puts each entry a `malloc` size
    /// class lower.
    private let buffer: ManagedBuffer<Header, UInt8>

    private struct Header {
        var keyCount: UInt32
        var valueCount: UInt32
        /// How many bytes the numbers take, before the key.
        var numbersCount: UInt8
    }

    /// An entry's numbers, as its elements hold them: LEB128 varints, in this order.
    package struct Numbers {
        package var version: UInt64
        package var createRevision: UInt64
        package var modRevision: UInt64
        package var ephemeralSession: UInt64

        var encodedCount: Int {
            Self.count(version) + Self.count(createRevision) + Self.count(modRevision) + Self.count(ephemeralSession)
        }

        private static func count(_ value: UInt64) -> Int {
            // 7 bits a byte: 1 byte for 0, 10 for the largest.
            (Int(UInt64.bitWidth - value.leadingZeroBitCount) + 6) / 7 + (value == 0 ? 1 : 0)
        }

        /// Writes the numbers at `start`; returns the byte after them.
        func write(to start: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8> {
            var next = start
            func write(_ value: UInt64) {
                var value = value
                while value >= 0x80 {
                    next.pointee = UInt8(truncatingIfNeeded: value) | 0x80
                    next += 1
                    value >>= 7
                }
                next.pointee = UInt8(value)
                next += 1
            }
            write(version)
            write(createRevision)
            write(modRevision)
            write(ephemeralSession)
            return next
        }

        /// The numbers written at `start`.
        init(readingFrom start: UnsafePointer<UInt8>) {
            var next = start
            func read() -> UInt64 {
                var value: UInt64 = 0
                var shift: UInt64 = 0
                while true {
                    let byte = next.pointee
                    next += 1
                    value |= UInt64(byte & 0x7F) << shift
                    if byte < 0x80 { return value }
                    shift += 7
                }
            }
            version = read()
            createRevision = read()
            modRevision = read()
            ephemeralSession = read()
        }

        init(version: UInt64, createRevision: UInt64, modRevision: UInt64, ephemeralSession: UInt64) {
            self.version = version
            self.createRevision = createRevision
            self.modRevision = modRevision
            self.ephemeralSession = ephemeralSession
        }
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
        let numbers = Numbers(
            version: version, createRevision: createRevision, modRevision: modRevision, ephemeralSession: ephemeralSession)
        let numbersCount = numbers.encodedCount
        let buffer = ManagedBuffer<Header, UInt8>.create(minimumCapacity: numbersCount + key.count + value.count) { _ in
            Header(keyCount: UInt32(key.count), valueCount: UInt32(value.count), numbersCount: UInt8(numbersCount))
        }
        buffer.withUnsafeMutablePointerToElements { elements in
            let keyStart = numbers.write(to: elements)
            if let base = key.baseAddress { keyStart.initialize(from: base.assumingMemoryBound(to: UInt8.self), count: key.count) }
            if let base = value.baseAddress {
                (keyStart + key.count).initialize(from: base.assumingMemoryBound(to: UInt8.self), count: value.count)
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

    /// The entry's lengths. Read through a pointer: `buffer.header`, a class's stored property,
    /// would check exclusive access at run time on every read, and the key order's search reads
    /// a key's length once per comparison.
    private var header: Header {
        buffer.withUnsafeMutablePointerToHeader { $0.pointee }
    }

    /// The entry's numbers, decoded.
    package var numbers: Numbers {
        buffer.withUnsafeMutablePointerToElements { Numbers(readingFrom: $0) }
    }

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
        let header = self.header
        let numbers = self.numbers
        let value =
            withValue
            ? buffer.withUnsafeMutablePointerToElements {
                Data(bytes: $0 + Int(header.numbersCount) + Int(header.keyCount), count: Int(header.valueCount))
            } : Data()
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
        let header = self.header
        guard Int(header.valueCount) == value.count else { return false }
        return buffer.withUnsafeMutablePointerToElements { elements in
            value.withUnsafeBytes { other in
                other.isEmpty || memcmp(elements + Int(header.numbersCount) + Int(header.keyCount), other.baseAddress!, other.count) == 0
            }
        }
    }

    /// Calls `body` with the key's UTF-8 bytes and the value's bytes, valid only inside it.
    package func withKeyAndValueBytes<R>(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        let header = self.header
        return try buffer.withUnsafeMutablePointerToElements { elements in
            let key = elements + Int(header.numbersCount)
            return try body(
                UnsafeBufferPointer(start: key, count: Int(header.keyCount)),
                UnsafeBufferPointer(start: key + Int(header.keyCount), count: Int(header.valueCount)))
        }
    }

    /// Whether this is `other`, the same stored bytes, not only equal ones.
    func isStored(as other: StoredEntry) -> Bool {
        buffer === other.buffer
    }

    /// Calls `body` with the key's UTF-8 bytes, valid only inside it.
    func withKeyBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        let header = self.header
        return buffer.withUnsafeMutablePointerToElements {
            body(UnsafeBufferPointer(start: $0 + Int(header.numbersCount), count: Int(header.keyCount)))
        }
    }
}
