import NIOCore
import SwiftProtobuf

/// Encodes and decodes the protobuf message inside one frame.
public enum Frame {
    /// The length in front of every frame's payload.
    static let headerBytes = 4

    /// Encodes `message` as one frame: its length as a 4-byte big-endian integer, then its bytes.
    /// The message is written straight into the frame's buffer.
    public static func encode(_ message: some SwiftProtobuf.Message) -> ByteBuffer {
        // Serializing a message built in memory only fails for unset required fields, which proto3
        // does not have.
        let bytes: FrameBytes = (try? message.serializedBytes()) ?? FrameBytes(repeating: 0, count: 0)
        return bytes.frame
    }

    /// Decodes the message in a frame's payload.
    ///
    /// - Throws: ``SharedStateError`` with code `protocolViolation` if the bytes are not a `Message`.
    public static func decode<Message: SwiftProtobuf.Message>(
        _ type: Message.Type,
        from payload: ByteBuffer
    ) throws(SharedStateError) -> Message {
        do {
            return try Message(serializedBytes: FrameBytes(payload: payload))
        } catch {
            throw SharedStateError(.protocolViolation, "malformed \(Message.protoMessageName) frame: \(error)")
        }
    }
}
