import Foundation
import NIOCore

/// The frame of a put request (`ClientFrame.request`, a `Request` whose operation is `put`),
/// written by hand, byte for byte as SwiftProtobuf writes it (`PutRequestFrameTests`), into one
/// buffer of the exact size.
///
/// A put is the request a feature process makes most, and the time it takes to leave is part of
/// every write → reducer latency: through SwiftProtobuf it built three nested messages, measured
/// their bytes in one pass and wrote them in another into an array of its own, then copied that
/// behind the frame's length (BENCHMARKS.md, issue 38, step 32).
package enum PutRequestFrame {
    /// The frame of put request `id`; the fields as in `PutRequest` (`ifVersion` is written when
    /// given, 0 included: it means "only if the key does not exist").
    package static func encode(
        id: UInt64,
        key: String,
        value: Data,
        ifVersion: UInt64?,
        ephemeral: Bool,
        cause: String,
        allocator: ByteBufferAllocator = ByteBufferAllocator()
    ) -> ByteBuffer {
        typealias Writer = ProtobufFieldWriter
        typealias Put = WireFields.PutRequest
        var key = key
        var cause = cause
        return key.withUTF8 { key in
            cause.withUTF8 { cause in
                value.withUnsafeBytes { value in
                    func textFieldSize(_ count: Int) -> Int { count == 0 ? 0 : 1 + Writer.lengthDelimitedSize(count) }
                    let put =
                        textFieldSize(key.count) + textFieldSize(value.count)
                        + (ifVersion.map { 1 + Writer.varintSize($0) } ?? 0) + (ephemeral ? 2 : 0) + textFieldSize(cause.count)
                    let request = Writer.varintFieldSize(id) + 1 + Writer.lengthDelimitedSize(put)
                    let payload = 1 + Writer.lengthDelimitedSize(request)
                    var buffer = allocator.buffer(capacity: Frame.headerBytes + payload)
                    buffer.writeInteger(UInt32(payload))
                    buffer.writeProtobufFields(maximumBytes: payload) { writer in
                        writer.key(WireFields.ClientFrame.request, .lengthDelimited)
                        writer.varint(UInt64(request))
                        if id != 0 { writer.varintField(WireFields.Request.id, id) }
                        writer.key(WireFields.Request.put, .lengthDelimited)
                        writer.varint(UInt64(put))
                        if key.count > 0 { writer.bytesField(Put.key, UnsafeRawBufferPointer(key)) }
                        if value.count > 0 { writer.bytesField(Put.value, value) }
                        if let ifVersion { writer.varintField(Put.ifVersion, ifVersion) }
                        if ephemeral { writer.varintField(Put.ephemeral, 1) }
                        if cause.count > 0 { writer.bytesField(Put.cause, UnsafeRawBufferPointer(cause)) }
                    }
                    return buffer
                }
            }
        }
    }
}
