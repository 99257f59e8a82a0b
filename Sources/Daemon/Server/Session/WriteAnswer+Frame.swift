import NIOCore
import SharedStateWire
import SyncEngine

package extension WriteAnswer {
    /// Appends the answer's frame to `buffer`, where the other answers of its commit go too: a
    /// put's or a delete's by hand (``WriteAnswerFrame``, D12), through SwiftProtobuf each took
    /// two objects (the message's storage and the frame's own buffer, then copied), a seventh of
    /// a lone write's budget (BENCHMARKS.md, issue 38); every other answer through SwiftProtobuf.
    func appendFrame(to buffer: inout ByteBuffer) {
        switch result {
        case .success(.put(let revision, let version)):
            WriteAnswerFrame.append(requestID: requestID, .put(revision: revision, version: version), to: &buffer)
        case .success(.delete(let revision)):
            WriteAnswerFrame.append(requestID: requestID, .delete(revision: revision), to: &buffer)
        default:
            var frame = Frame.encode(self.frame)
            buffer.writeBuffer(&frame)
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
