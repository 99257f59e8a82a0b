import Foundation
import NIOCore
import SharedStateWire
import Testing

/// The answers to puts and deletes, written by hand in syncd (D12) and read by hand in the client
/// (D16): the bytes written are SwiftProtobuf's, and the reader agrees with SwiftProtobuf on
/// every frame it reads and leaves every other frame to it (``HandCodecHarness``).
@Suite struct WriteAnswerFrameTests {
    private static let numbers: [UInt64] = [0, 1, 127, 128, 16_383, 16_384, 1 << 35, UInt64.max]

    private func decoded(_ bytes: [UInt8]) -> Sharedstate_V1_Response? {
        WriteAnswerFrame(frame: ByteBuffer(bytes: bytes))?.response
    }

    private func swiftProtobufs(_ bytes: [UInt8]) -> Sharedstate_V1_Response? {
        guard let frame = try? Sharedstate_V1_ServerFrame(serializedBytes: bytes), case .response(let response) = frame.kind
        else { return nil }
        return response
    }

    private static func frame(_ fill: (inout Sharedstate_V1_Response) -> Void) throws -> [UInt8] {
        try Sharedstate_V1_ServerFrame.with { $0.response = .with(fill) }.serializedBytes()
    }

    @Test func putAndDeleteAnswersAreSwiftProtobufsBytes() throws {
        for requestID in Self.numbers {
            for revision in Self.numbers {
                for version in Self.numbers {
                    var put = ByteBuffer()
                    WriteAnswerFrame.append(requestID: requestID, .put(revision: revision, version: version), to: &put)
                    let swiftProtobufsPut = Frame.encode(
                        Sharedstate_V1_ServerFrame.with {
                            $0.response = .with {
                                $0.id = requestID
                                $0.put = .with {
                                    $0.revision = revision
                                    $0.version = version
                                }
                            }
                        })
                    #expect(put == swiftProtobufsPut, "put \(requestID) \(revision) \(version)")
                    var delete = ByteBuffer()
                    WriteAnswerFrame.append(requestID: requestID, .delete(revision: revision), to: &delete)
                    let swiftProtobufsDelete = Frame.encode(
                        Sharedstate_V1_ServerFrame.with {
                            $0.response = .with {
                                $0.id = requestID
                                $0.delete = .with { $0.revision = revision }
                            }
                        })
                    #expect(delete == swiftProtobufsDelete, "delete \(requestID) \(revision)")
                }
            }
        }
    }

    @Test func readsEveryPutAndDeleteAnswerAsSwiftProtobufDoes() throws {
        for id in Self.numbers {
            for revision in Self.numbers {
                for version in Self.numbers {
                    let put = try Self.frame {
                        $0.id = id
                        $0.put = .with {
                            $0.revision = revision
                            $0.version = version
                        }
                    }
                    let delete = try Self.frame {
                        $0.id = id
                        $0.delete = .with { $0.revision = revision }
                    }
                    for bytes in [put, delete] {
                        let read = try #require(decoded(bytes), "\(bytes)")
                        #expect(read == swiftProtobufs(bytes))
                    }
                }
            }
        }
    }

    @Test func readsFieldsInAnyOrder() throws {
        // Response: put (version, revision), then id.
        let put: [UInt8] = [0x10, 3, 0x08, 9]
        let response: [UInt8] = [0x22, UInt8(put.count)] + put + [0x08, 5]
        let bytes: [UInt8] = [0x12, UInt8(response.count)] + response
        let read = try #require(decoded(bytes))
        #expect(read.id == 5 && read.put.revision == 9 && read.put.version == 3)
        #expect(read == swiftProtobufs(bytes))
    }

    @Test func leavesEveryOtherFrameToSwiftProtobuf() throws {
        let error = try Self.frame {
            $0.id = 1
            $0.error = .with {
                $0.code = .conflict
                $0.message = "version 3 is not 2"
            }
        }
        let get = try Self.frame {
            $0.id = 1
            $0.get = .with { $0.entry = .with { $0.key = "k" } }
        }
        let noResult = try Self.frame { $0.id = 1 }
        let welcome: [UInt8] = try Sharedstate_V1_ServerFrame.with { $0.welcome = .with { $0.protocolVersion = 1 } }.serializedBytes()
        let event: [UInt8] = try Sharedstate_V1_ServerFrame.with { $0.event = .with { $0.watchID = 1 } }.serializedBytes()
        let put = try Self.frame {
            $0.id = 1
            $0.put = .with { $0.revision = 2 }
        }
        let idTwice: [UInt8] = [0x12, 6, 0x08, 1, 0x08, 2, 0x22, 0]
        let putAndDelete: [UInt8] = [0x12, 4, 0x22, 0, 0x2A, 0]
        let deleteWithVersion: [UInt8] = [0x12, 4, 0x2A, 2, 0x10, 1]
        let unknownField: [UInt8] = [0x12, 4, 0x22, 2, 0x18, 1]
        let truncated = Array(put.dropLast())
        let overlongVarint: [UInt8] = [0x12, 13, 0x22, 11, 0x08] + [UInt8](repeating: 0xFF, count: 9) + [0x02]
        let secondFrameField = put + [0x12, 0]
        for (what, bytes) in [
            ("an error", error), ("a get's answer", get), ("no result", noResult), ("a welcome", welcome), ("an event", event),
            ("an id twice", idTwice), ("a put and a delete", putAndDelete), ("a delete with a version", deleteWithVersion),
            ("an unknown field", unknownField), ("truncated", truncated), ("a varint past 64 bits", overlongVarint),
            ("a second frame field", secondFrameField),
        ] {
            #expect(decoded(bytes) == nil, "\(what)")
        }
        #expect(decoded(put) != nil)
    }

    /// Whatever the bytes, an answer read by hand is the answer SwiftProtobuf reads from them.
    @Test func neverReadsAnAnswerSwiftProtobufWouldReadOtherwise() throws {
        let seeds = try Self.numbers.enumerated().map { index, number in
            try Self.frame {
                $0.id = number
                if index % 2 == 0 {
                    $0.put = .with {
                        $0.revision = Self.numbers[(index + 3) % Self.numbers.count]
                        $0.version = number
                    }
                } else {
                    $0.delete = .with { $0.revision = number }
                }
            }
        }
        let (disagreements, read) = HandCodecHarness.damage(seeds, read: decoded, reference: swiftProtobufs)
        #expect(disagreements.isEmpty, "\(disagreements.prefix(5))")
        #expect(read > 1_000)
    }
}
