import Foundation
import NIOCore

/// The frame of a put request, written by the client by hand: what a writing process sends for
/// each write, without building SwiftProtobuf's messages (`Frame.encode` was a tenth of a
/// pipelined writer's CPU; D48). syncd reads the same shape by hand too (``DecodedPut``).
///
/// The bytes are SwiftProtobuf's for a `ClientFrame` whose `request` holds an id and a
/// `PutRequest`: fields in number order, zero values left out, `if_version` written whenever it is
/// set (it is `optional`). `PutRequestFrameTests` checks them against SwiftProtobuf's.
package enum PutRequestFrame {
    /// The whole frame (length, then payload) of put request `id`.
    package static func encode(id: UInt64, key: String, value: Data, ifVersion: UInt64?, ephemeral: Bool, cause: String) -> ByteBuffer {
        typealias Writer = ProtobufFieldWriter
        var key = key
        var cause = cause
        let keyCount = key.utf8.count
        let causeCount = cause.utf8.count
        let put =
            (keyCount == 0 ? 0 : 1 + Writer.lengthDelimitedSize(keyCount))
            + (value.isEmpty ? 0 : 1 + Writer.lengthDelimitedSize(value.count))
            + (ifVersion.map { 1 + Writer.varintSize($0) } ?? 0)
            + (ephemeral ? 2 : 0)
            + (causeCount == 0 ? 0 : 1 + Writer.lengthDelimitedSize(causeCount))
        let request = Writer.varintFieldSize(id) + 1 + Writer.lengthDelimitedSize(put)
        let payload = 1 + Writer.lengthDelimitedSize(request)
        var buffer = ByteBufferAllocator().buffer(capacity: Frame.headerBytes + payload)
        buffer.writeInteger(UInt32(payload))
        key.withUTF8 { key in
            cause.withUTF8 { cause in
                value.withUnsafeBytes { value in
                    buffer.writeProtobufFields(maximumBytes: payload) { writer in
                        writer.key(WireFields.ClientFrame.request, .lengthDelimited)
                        writer.varint(UInt64(request))
                        if id != 0 { writer.varintField(WireFields.Request.id, id) }
                        writer.key(WireFields.Request.put, .lengthDelimited)
                        writer.varint(UInt64(put))
                        if keyCount > 0 { writer.bytesField(WireFields.PutRequest.key, UnsafeRawBufferPointer(key)) }
                        if value.count > 0 { writer.bytesField(WireFields.PutRequest.value, value) }
                        if let ifVersion { writer.varintField(WireFields.PutRequest.ifVersion, ifVersion) }
                        if ephemeral { writer.varintField(WireFields.PutRequest.ephemeral, 1) }
                        if causeCount > 0 { writer.bytesField(WireFields.PutRequest.cause, UnsafeRawBufferPointer(cause)) }
                    }
                }
            }
        }
        return buffer
    }
}
