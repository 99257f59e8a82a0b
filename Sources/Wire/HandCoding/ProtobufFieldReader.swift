import NIOCore

/// Reads protobuf fields from a message's bytes in place, for the few messages each side decodes
/// by hand on its hot path (syncd's puts, `DecodedPut`; the client's watch events and write
/// answers, `WatchEventFrame` and `WriteAnswerFrame`) instead of through SwiftProtobuf's generic decoding; field numbers are in
/// ``WireFields``. Each read returns nil when the bytes end
/// too soon or are not in the expected shape; the caller then leaves the whole frame to
/// SwiftProtobuf.
package struct ProtobufFieldReader {
    /// The wire types the hand-written readers accept.
    package enum WireType: UInt8 {
        case varint = 0
        case lengthDelimited = 2
    }

    private let bytes: UnsafeRawBufferPointer
    private var offset = 0

    package init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// The one-byte key of field `number` (below 16) of `type`.
    @inlinable
    package static func tag(_ number: UInt8, _ type: WireType) -> UInt8 {
        number << 3 | type.rawValue
    }

    package var isAtEnd: Bool { offset == bytes.count }

    /// What `read` makes of the message in field `number` of a frame (a `ClientFrame` or a
    /// `ServerFrame`) that holds that field and nothing else; nil for any other frame, or when
    /// `read` returns nil. The frames read by hand are each one such field.
    package static func soleMessage<Value>(
        _ number: UInt8, of payload: ByteBuffer, _ read: (UnsafeRawBufferPointer) -> Value?
    ) -> Value? {
        payload.withUnsafeReadableBytes { bytes in
            var frame = ProtobufFieldReader(bytes)
            guard frame.nextTag() == tag(number, .lengthDelimited), let message = frame.lengthDelimited(), frame.isAtEnd else {
                return nil
            }
            return read(message)
        }
    }

    /// The next field's key, when it fits in one byte (field numbers below 16), else nil.
    package mutating func nextTag() -> UInt8? {
        guard offset < bytes.count, bytes[offset] < 0x80 else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// A base-128 varint of at most 10 bytes.
    package mutating func varint() -> UInt64? {
        Varint.read(bytes, at: &offset)
    }

    /// A length-delimited field's contents, in place.
    package mutating func lengthDelimited() -> UnsafeRawBufferPointer? {
        guard let length = varint(), length <= UInt64(bytes.count - offset) else { return nil }
        let start = offset
        offset += Int(length)
        return UnsafeRawBufferPointer(rebasing: bytes[start..<offset])
    }

    /// A length-delimited field holding UTF-8 text, as SwiftProtobuf requires of a `string`.
    package mutating func string() -> String? {
        guard let bytes = lengthDelimited() else { return nil }
        // Plain ASCII, the usual key, is valid UTF-8 as it is: `String(decoding:)` of bytes
        // takes a path specialized for them, where `String(validating:)` looks its generic
        // types up at run time on every call.
        var high: UInt8 = 0
        for byte in bytes { high |= byte }
        if high < 0x80 { return String(decoding: bytes.assumingMemoryBound(to: UInt8.self), as: UTF8.self) }
        return String(validating: bytes, as: UTF8.self)
    }
}

/// The field numbers (below 16) a message has shown so far, for readers that take each field at
/// most once.
package struct ProtobufFieldSet {
    private var bits: UInt16 = 0

    package init() {}

    /// Adds the field of `tag`; false when it was there already.
    package mutating func insert(_ tag: UInt8) -> Bool {
        let bit = UInt16(1) << (tag >> 3)
        defer { bits |= bit }
        return bits & bit == 0
    }
}
