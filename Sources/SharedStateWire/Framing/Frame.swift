import NIOCore
import SwiftProtobuf

/// Encodes and decodes the protobuf message inside one frame.
public enum Frame {
    /// Encodes `message` as one frame: its length as a 4-byte big-endian integer, then its bytes.
    public static func encode(_ message: some SwiftProtobuf.Message, allocator: ByteBufferAllocator) -> ByteBuffer {
        // Serializing a message built in memory only fails for unset required fields, which proto3
        // does not have.
        let bytes: [UInt8] = (try? message.serializedBytes()) ?? []
        var buffer = allocator.buffer(capacity: 4 + bytes.count)
        buffer.writeInteger(UInt32(bytes.count))
        buffer.writeBytes(bytes)
        return buffer
    }

    /// Decodes the message in a frame's payload.
    ///
    /// - Throws: ``SharedStateError`` with code `protocolViolation` if the bytes are not a `Message`.
    public static func decode<Message: SwiftProtobuf.Message>(
        _ type: Message.Type,
        from payload: ByteBuffer
    ) throws(SharedStateError) -> Message {
        do {
            return try Message(serializedBytes: Array(payload.readableBytesView))
        } catch {
            throw SharedStateError(.protocolViolation, "malformed \(Message.protoMessageName) frame: \(error)")
        }
    }
}
