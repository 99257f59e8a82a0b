import NIOCore
import SwiftProtobuf

/// A frame's payload as SwiftProtobuf reads and writes it, in the `ByteBuffer` the frame travels
/// in: encoding writes the message in place behind room for its length, and decoding reads the
/// payload where it lies. Without it, every frame was encoded into an array and copied into a
/// buffer, and copied into an array again to be decoded.
struct FrameBytes: SwiftProtobufContiguousBytes {
    /// The payload is the readable part; the 4 bytes before it are kept for the length.
    private(set) var buffer: ByteBuffer

    /// The payload of a received frame, read in place.
    init(payload: ByteBuffer) {
        buffer = payload
    }

    init(repeating byte: UInt8, count: Int) {
        var buffer = ByteBufferAllocator().buffer(capacity: Frame.headerBytes + count)
        buffer.writeInteger(UInt32(count))
        buffer.writeRepeatingByte(byte, count: count)
        buffer.moveReaderIndex(forwardBy: Frame.headerBytes)
        self.buffer = buffer
    }

    init<S: Sequence>(_ sequence: S) where S.Element == UInt8 {
        var buffer = ByteBufferAllocator().buffer(capacity: Frame.headerBytes + sequence.underestimatedCount)
        buffer.writeInteger(UInt32(0))
        let count = buffer.writeBytes(Array(sequence))
        buffer.setInteger(UInt32(count), at: buffer.readerIndex)
        buffer.moveReaderIndex(forwardBy: Frame.headerBytes)
        self.buffer = buffer
    }

    var count: Int { buffer.readableBytes }

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try buffer.withUnsafeReadableBytes(body)
    }

    mutating func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try buffer.withUnsafeMutableReadableBytes(body)
    }

    /// The whole frame of an encoded payload: its length, then its bytes.
    var frame: ByteBuffer {
        var frame = buffer
        frame.moveReaderIndex(to: buffer.readerIndex - Frame.headerBytes)
        return frame
    }
}
