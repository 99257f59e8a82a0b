import NIOCore

/// A server frame holding the answer to a put or a delete, written by syncd and read by the
/// client straight from the frame's bytes: the answer a writing process waits for after each
/// write, without SwiftProtobuf's messages on either side (D12, D16).
///
/// syncd writes (``append(requestID:_:to:)``) and the client reads (``init(frame:)``) one shape:
/// a `ServerFrame` whose `response` holds an id and a `PutResponse` or a `DeleteResponse`, each
/// field at most once, byte for byte as SwiftProtobuf writes it. Anything else (an error, another
/// result, another frame, an unknown field, bytes that end too soon) makes ``init(frame:)``
/// return nil, and SwiftProtobuf then decodes the frame or says what is wrong with it.
/// `WriteAnswerFrameTests` checks both against SwiftProtobuf.
package struct WriteAnswerFrame {
    /// What a put or a delete answered.
    package enum Written: Equatable, Sendable {
        case put(revision: UInt64, version: UInt64)
        case delete(revision: UInt64)
    }

    /// The answer, as SwiftProtobuf would have decoded it.
    package let response: Sharedstate_V1_Response

    /// Appends the frame of request `requestID`'s answer `written` to `buffer`, where the other
    /// answers of its commit go too.
    package static func append(requestID: UInt64, _ written: Written, to buffer: inout ByteBuffer) {
        typealias Writer = ProtobufFieldWriter
        let (revision, version, field): (UInt64, UInt64, UInt8) =
            switch written {
            case .put(let revision, let version): (revision, version, WireFields.Response.put)
            case .delete(let revision): (revision, 0, WireFields.Response.delete)
            }
        let body = Writer.varintFieldSize(revision) + Writer.varintFieldSize(version)
        let response = Writer.varintFieldSize(requestID) + 1 + Writer.lengthDelimitedSize(body)
        let payload = 1 + Writer.lengthDelimitedSize(response)
        buffer.writeInteger(UInt32(payload))
        buffer.writeProtobufFields(maximumBytes: payload) { writer in
            writer.key(WireFields.ServerFrame.response, .lengthDelimited)
            writer.varint(UInt64(response))
            if requestID != 0 { writer.varintField(WireFields.Response.id, requestID) }
            writer.key(field, .lengthDelimited)
            writer.varint(UInt64(body))
            if revision != 0 { writer.varintField(WireFields.WriteResponse.revision, revision) }
            if version != 0 { writer.varintField(WireFields.WriteResponse.version, version) }
        }
    }

    /// The answer in `payload`, or nil for any other frame.
    package init?(frame payload: ByteBuffer) {
        guard let decoded = ProtobufFieldReader.soleMessage(WireFields.ServerFrame.response, of: payload, Self.response)
        else { return nil }
        response = decoded
    }

    private static func response(_ bytes: UnsafeRawBufferPointer) -> Sharedstate_V1_Response? {
        typealias Response = WireFields.Response
        var fields = ProtobufFieldReader(bytes)
        var seen = ProtobufFieldSet()
        var id: UInt64 = 0
        var result: Sharedstate_V1_Response.OneOf_Result?
        while !fields.isAtEnd {
            guard let tag = fields.nextTag(), seen.insert(tag) else { return nil }
            switch tag {
            case ProtobufFieldReader.tag(Response.id, .varint):
                guard let value = fields.varint() else { return nil }
                id = value
            case ProtobufFieldReader.tag(Response.put, .lengthDelimited):
                guard result == nil, let body = fields.lengthDelimited(), let (revision, version) = Self.written(body, hasVersion: true)
                else { return nil }
                result = .put(
                    .with {
                        $0.revision = revision
                        $0.version = version
                    })
            case ProtobufFieldReader.tag(Response.delete, .lengthDelimited):
                guard result == nil, let body = fields.lengthDelimited(), let (revision, _) = Self.written(body, hasVersion: false)
                else { return nil }
                result = .delete(.with { $0.revision = revision })
            default:
                return nil
            }
        }
        guard let result else { return nil }
        var response = Sharedstate_V1_Response()
        response.id = id
        response.result = result
        return response
    }

    /// A `PutResponse`'s revision and version, or a `DeleteResponse`'s revision.
    private static func written(_ bytes: UnsafeRawBufferPointer, hasVersion: Bool) -> (revision: UInt64, version: UInt64)? {
        typealias Written = WireFields.WriteResponse
        var fields = ProtobufFieldReader(bytes)
        var seen = ProtobufFieldSet()
        var revision: UInt64 = 0
        var version: UInt64 = 0
        while !fields.isAtEnd {
            guard let tag = fields.nextTag(), seen.insert(tag) else { return nil }
            switch tag {
            case ProtobufFieldReader.tag(Written.revision, .varint):
                guard let value = fields.varint() else { return nil }
                revision = value
            case ProtobufFieldReader.tag(Written.version, .varint) where hasVersion:
                guard let value = fields.varint() else { return nil }
                version = value
            default:
                return nil
            }
        }
        return (revision, version)
    }
}
