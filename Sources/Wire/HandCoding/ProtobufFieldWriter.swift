import NIOCore

/// Writes protobuf fields by hand, byte for byte as SwiftProtobuf writes them (fields in number
/// order, zero values left out), for the few messages syncd encodes on its hot path: the change
/// log's record of a revision (`LogRecordEncoding`) and the header of its frame for each watch
/// (`EncodedRevision`). Their tests check the bytes against SwiftProtobuf's.
///
/// It writes into memory the caller sized with ``varintSize(_:)`` and the other sizes, so a
/// message takes one allocation of the exact size.
package struct ProtobufFieldWriter {
    // Inlined into the encoders in other modules: each is a few instructions, called per byte.
    @usableFromInline let base: UnsafeMutableRawPointer
    /// How many bytes it has written.
    package var offset = 0

    @inlinable
    package init(base: UnsafeMutableRawPointer) {
        self.base = base
    }

    // MARK: Sizes

    /// The bytes `value` takes as a varint: one per 7 bits, at least one.
    @inlinable
    package static func varintSize(_ value: UInt64) -> Int {
        Varint.size(value)
    }

    /// The bytes of a varint field (key and value); none for 0, which proto3 leaves out.
    @inlinable
    package static func varintFieldSize(_ value: UInt64) -> Int {
        value == 0 ? 0 : 1 + varintSize(value)
    }

    /// The bytes of a length-delimited field's length and its `count` bytes of contents.
    @inlinable
    package static func lengthDelimitedSize(_ count: Int) -> Int {
        varintSize(UInt64(count)) + count
    }

    // MARK: Writing

    @inlinable
    package mutating func byte(_ value: UInt8) {
        base.storeBytes(of: value, toByteOffset: offset, as: UInt8.self)
        offset += 1
    }

    /// A varint (``Varint``).
    @inlinable
    package mutating func varint(_ value: UInt64) {
        let start = (base + offset).assumingMemoryBound(to: UInt8.self)
        offset += Varint.write(value, to: start) - start
    }

    /// The key of field `number` (see ``WireFields``) of wire type `type`.
    @inlinable
    package mutating func key(_ number: UInt8, _ type: ProtobufFieldReader.WireType) {
        byte(ProtobufFieldReader.tag(number, type))
    }

    @inlinable
    package mutating func varintField(_ number: UInt8, _ value: UInt64) {
        key(number, .varint)
        varint(value)
    }

    @inlinable
    package mutating func bytesField(_ number: UInt8, _ bytes: UnsafeRawBufferPointer) {
        key(number, .lengthDelimited)
        varint(UInt64(bytes.count))
        if let source = bytes.baseAddress, bytes.count > 0 {
            (base + offset).copyMemory(from: source, byteCount: bytes.count)
            offset += bytes.count
        }
    }
}

extension ByteBuffer {
    /// Appends `write`'s fields, which take at most `maximumBytes`.
    package mutating func writeProtobufFields(maximumBytes: Int, _ write: (inout ProtobufFieldWriter) -> Void) {
        writeWithUnsafeMutableBytes(minimumWritableBytes: maximumBytes) { buffer in
            var writer = ProtobufFieldWriter(base: buffer.baseAddress!)
            write(&writer)
            return writer.offset
        }
    }
}
