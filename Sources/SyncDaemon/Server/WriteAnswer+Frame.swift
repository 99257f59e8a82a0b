import NIOCore
import SharedStateWire

extension WriteAnswer {
    /// Appends the answer's frame to `buffer`: a put's or a delete's written by hand, byte for
    /// byte as SwiftProtobuf writes ``frame`` (they are nearly every answer, and its generic
    /// encoding cost more than the rest of answering), any other through it.
    func appendFrame(to buffer: inout ByteBuffer) {
        let result: (field: UInt8, revision: UInt64, version: UInt64)
        switch self.result {
        case .success(.put(let revision, let version)): result = (4, revision, version)
        case .success(.delete(let revision)): result = (5, revision, 0)
        default:
            var frame = Frame.encode(self.frame)
            buffer.writeBuffer(&frame)
            return
        }
        // Response { id = 1; put = 4 { revision = 1; version = 2 } | delete = 5 { revision = 1 } }
        let resultBytes = Varint.fieldSize(result.revision) + Varint.fieldSize(result.version)
        let responseBytes = Varint.fieldSize(requestID) + 1 + Varint.lengthDelimitedSize(resultBytes)
        buffer.writeInteger(UInt32(1 + Varint.lengthDelimitedSize(responseBytes)))
        buffer.writeInteger(UInt8(0x12))  // ServerFrame.response, length-delimited
        Varint.write(UInt64(responseBytes), to: &buffer)
        if requestID != 0 {
            buffer.writeInteger(UInt8(0x08))
            Varint.write(requestID, to: &buffer)
        }
        buffer.writeInteger(result.field << 3 | 2)
        Varint.write(UInt64(resultBytes), to: &buffer)
        if result.revision != 0 {
            buffer.writeInteger(UInt8(0x08))
            Varint.write(result.revision, to: &buffer)
        }
        if result.version != 0 {
            buffer.writeInteger(UInt8(0x10))
            Varint.write(result.version, to: &buffer)
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
