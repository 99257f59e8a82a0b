import Foundation
import NIOCore

/// A client frame holding one put request, read by syncd straight from the frame's bytes (in
/// the shape SwiftProtobuf writes, as the clients do): the request syncd receives most often,
/// without SwiftProtobuf's generic decoding and the three messages it allocates for the frame,
/// the request and the put.
///
/// It reads the shape clients send: each field at most once, no field it does not know. Anything
/// else — another request, a field twice or unknown, a varint or a length that runs past the
/// end, a string that is not UTF-8 — makes ``init(frame:)`` return nil, and SwiftProtobuf then
/// decodes the frame or says what is wrong with it. `DecodedPutTests` checks both agree (D11).
package struct DecodedPut: Equatable, Sendable {
    package var requestID: UInt64 = 0
    package var key = ""
    package var value = Data()
    package var ifVersion: UInt64?
    package var isEphemeral = false
    package var cause = ""

    package init(requestID: UInt64, key: String, value: Data, ifVersion: UInt64?, isEphemeral: Bool, cause: String) {
        self.requestID = requestID
        self.key = key
        self.value = value
        self.ifVersion = ifVersion
        self.isEphemeral = isEphemeral
        self.cause = cause
    }

    /// The put in `payload` (a `ClientFrame` whose `request` is a put), or nil for any other frame.
    package init?(frame payload: ByteBuffer) {
        guard let decoded = ProtobufFieldReader.soleMessage(WireFields.ClientFrame.request, of: payload, { Self(request: $0) })
        else { return nil }
        self = decoded
    }

    private init?(request bytes: UnsafeRawBufferPointer) {
        var request = ProtobufFieldReader(bytes)
        var seen = ProtobufFieldSet()
        var put: UnsafeRawBufferPointer?
        while !request.isAtEnd {
            guard let tag = request.nextTag(), seen.insert(tag) else { return nil }
            switch tag {
            case Self.tag(WireFields.Request.id, .varint):
                guard let id = request.varint() else { return nil }
                requestID = id
            case Self.tag(WireFields.Request.put, .lengthDelimited):
                guard let bytes = request.lengthDelimited() else { return nil }
                put = bytes
            default:
                return nil
            }
        }
        guard let put, readPut(put) else { return nil }
    }

    /// Reads a `PutRequest`'s fields into this value; false when it is not in the expected shape.
    private mutating func readPut(_ bytes: UnsafeRawBufferPointer) -> Bool {
        typealias Fields = WireFields.PutRequest
        var put = ProtobufFieldReader(bytes)
        var seen = ProtobufFieldSet()
        while !put.isAtEnd {
            guard let tag = put.nextTag(), seen.insert(tag) else { return false }
            switch tag {
            case Self.tag(Fields.key, .lengthDelimited):
                guard let key = put.string() else { return false }
                self.key = key
            case Self.tag(Fields.value, .lengthDelimited):
                guard let bytes = put.lengthDelimited() else { return false }
                value = Data(bytes)
            case Self.tag(Fields.ifVersion, .varint):
                guard let version = put.varint() else { return false }
                ifVersion = version
            case Self.tag(Fields.ephemeral, .varint):
                guard let flag = put.varint() else { return false }
                isEphemeral = flag != 0
            case Self.tag(Fields.cause, .lengthDelimited):
                guard let cause = put.string() else { return false }
                self.cause = cause
            default:
                return false
            }
        }
        return true
    }

    private static func tag(_ number: UInt8, _ type: ProtobufFieldReader.WireType) -> UInt8 {
        ProtobufFieldReader.tag(number, type)
    }
}

package extension DecodedPut {
    /// The put of request `requestID` as SwiftProtobuf decoded it, when ``init(frame:)`` left the
    /// frame to it.
    init(_ put: Sharedstate_V1_PutRequest, requestID: UInt64) {
        self.init(
            requestID: requestID, key: put.key, value: put.value, ifVersion: put.hasIfVersion ? put.ifVersion : nil,
            isEphemeral: put.ephemeral, cause: put.cause)
    }
}
