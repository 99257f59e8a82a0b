import NIOCore
import SharedStateWire
import SyncEngine

package extension WriteAnswer {
    /// Appends the answer's frame to `buffer`, where the other answers of its commit go too.
    ///
    /// A put's or a delete's answer is written by hand, byte for byte as SwiftProtobuf writes it
    /// (`WriteAnswerFrameTests`): through SwiftProtobuf each took two objects (the message's
    /// storage and the frame's own buffer, then copied), a seventh of a lone write's budget
    /// (BENCHMARKS.md, issue 38). Every other answer goes through SwiftProtobuf.
    func appendFrame(to buffer: inout ByteBuffer) {
        typealias Writer = ProtobufFieldWriter
        let revision: UInt64
        let version: UInt64
        let field: UInt8
        switch result {
        case .success(.put(let putRevision, let putVersion)):
            (revision, version, field) = (putRevision, putVersion, WireFields.Response.put)
        case .success(.delete(let deleteRevision)):
            (revision, version, field) = (deleteRevision, 0, WireFields.Response.delete)
        default:
            var frame = Frame.encode(self.frame)
            buffer.writeBuffer(&frame)
            return
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

    /// The answer as the response frame the client waits for.
    var frame: Sharedstate_V1_ServerFrame {
        .with {
            $0.response = .with {
                $0.id = requestID
                switch result {
                case .success(.put(let revision, let version)):
                    $0.put = .with {
                        $0.revision = revision
                        $0.version = version
                    }
                case .success(.delete(let revision)):
                    $0.delete = .with { $0.revision = revision }
                case .success(.transaction(let succeeded, let revision)):
                    $0.transaction = .with {
                        $0.succeeded = succeeded
                        $0.revision = revision
                    }
                case .success(.restored(let revision, let puts, let deletes)):
                    $0.restore = .with {
                        $0.revision = revision
                        $0.puts = UInt64(puts)
                        $0.deletes = UInt64(deletes)
                    }
                case .success(.expired):
                    break  // never asked for by a client
                case .failure(let error):
                    $0.error = error.wireValue
                }
            }
        }
    }
}
