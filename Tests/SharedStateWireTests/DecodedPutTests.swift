import Foundation
import NIOCore
import SharedStateWire
import Testing

/// syncd's hand-written reader of put frames (D11) agrees with SwiftProtobuf on every frame it
/// reads, and leaves every other frame to it (``HandCodecHarness``).
@Suite struct DecodedPutTests {
    private func frame(_ fill: (inout Sharedstate_V1_Request) -> Void) throws -> [UInt8] {
        try Sharedstate_V1_ClientFrame.with { $0.request = .with(fill) }.serializedBytes()
    }

    private func decoded(_ bytes: [UInt8]) -> DecodedPut? {
        DecodedPut(frame: ByteBuffer(bytes: bytes))
    }

    /// What SwiftProtobuf reads from `bytes`: nil unless it is a put request.
    private func swiftProtobufs(_ bytes: [UInt8]) -> DecodedPut? {
        guard let frame = try? Sharedstate_V1_ClientFrame(serializedBytes: bytes),
            case .request(let request) = frame.kind, case .put(let put) = request.operation
        else { return nil }
        return DecodedPut(put, requestID: request.id)
    }

    @Test func readsEveryShapeOfPutAsSwiftProtobufDoes() throws {
        let numbers: [UInt64] = [0, 1, 127, 128, 16_383, 16_384, 1 << 35, .max]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let id = numbers.randomElement(using: &generator)!
            let key = ["", "k", "door/locked", String(repeating: "zé/", count: 60)].randomElement(using: &generator)!
            let value = Data(repeating: UInt8(ascii: "1"), count: [0, 1, 127, 128, 20_000].randomElement(using: &generator)!)
            let ifVersion = [nil, 0, 1, UInt64.max].randomElement(using: &generator)!
            let isEphemeral = Bool.random(using: &generator)
            let cause = ["", "door-lock: requestApplied(r7)", String(repeating: "ü", count: 128)].randomElement(using: &generator)!
            let bytes = try frame {
                $0.id = id
                $0.put = .with {
                    $0.key = key
                    $0.value = value
                    if let ifVersion { $0.ifVersion = ifVersion }
                    $0.ephemeral = isEphemeral
                    $0.cause = cause
                }
            }
            let put = try #require(decoded(bytes), "id \(id), key \(key.utf8.count) bytes, value \(value.count) bytes")
            #expect(put == DecodedPut(requestID: id, key: key, value: value, ifVersion: ifVersion, isEphemeral: isEphemeral, cause: cause))
            #expect(put == swiftProtobufs(bytes))
        }
    }

    @Test func readsFieldsInAnyOrder() throws {
        // Request: put (3) before id (1); PutRequest: cause, ephemeral, if_version, value, key.
        let put: [UInt8] = [0x2A, 1, UInt8(ascii: "c"), 0x20, 1, 0x18, 0, 0x12, 1, UInt8(ascii: "7"), 0x0A, 1, UInt8(ascii: "k")]
        let request: [UInt8] = [0x1A, UInt8(put.count)] + put + [0x08, 9]
        let bytes: [UInt8] = [0x12, UInt8(request.count)] + request
        let expected = DecodedPut(requestID: 9, key: "k", value: Data("7".utf8), ifVersion: 0, isEphemeral: true, cause: "c")
        #expect(decoded(bytes) == expected)
        #expect(swiftProtobufs(bytes) == expected)
    }

    @Test func leavesEveryOtherFrameToSwiftProtobuf() throws {
        let hello: [UInt8] = try Sharedstate_V1_ClientFrame.with { $0.hello = .with { $0.protocolVersion = 1 } }.serializedBytes()
        let get = try frame {
            $0.id = 1
            $0.get = .with { $0.key = "k" }
        }
        let delete = try frame {
            $0.id = 1
            $0.delete = .with { $0.key = "k" }
        }
        let noOperation = try frame { $0.id = 1 }
        let put = try frame {
            $0.id = 1
            $0.put = .with { $0.key = "k" }
        }
        let keyTwice: [UInt8] = [0x12, 10, 0x08, 1, 0x1A, 6, 0x0A, 1, UInt8(ascii: "k"), 0x0A, 1, UInt8(ascii: "j")]
        let unknownField: [UInt8] = [0x12, 6, 0x08, 1, 0x1A, 2, 0x30, 1]
        let notUTF8: [UInt8] = [0x12, 7, 0x08, 1, 0x1A, 3, 0x0A, 1, 0xFF]
        let truncated = Array(put.dropLast())
        let overlongVarint: [UInt8] = [0x12, 13, 0x08] + [UInt8](repeating: 0xFF, count: 9) + [0x02, 0x1A, 0]
        let trailingField = put + [0x08, 1]
        for (what, bytes) in [
            ("hello", hello), ("get", get), ("delete", delete), ("no operation", noOperation), ("a field twice", keyTwice),
            ("an unknown field", unknownField), ("a key that is not UTF-8", notUTF8), ("truncated", truncated),
            ("a varint past 64 bits", overlongVarint), ("a second frame field", trailingField),
        ] {
            #expect(decoded(bytes) == nil, "\(what)")
        }
        #expect(decoded(put) != nil)
    }

    /// Whatever the bytes, a put read by hand is the put SwiftProtobuf reads from them.
    @Test func neverReadsAPutSwiftProtobufWouldReadOtherwise() throws {
        let seeds = try (0..<8).map { index in
            try frame {
                $0.id = UInt64(index) << (index * 8)
                $0.put = .with {
                    $0.key = "door/\(index)"
                    $0.value = Data(repeating: UInt8(ascii: "2"), count: index * 40)
                    if index % 2 == 0 { $0.ifVersion = UInt64(index) }
                    $0.ephemeral = index % 3 == 0
                    $0.cause = index % 4 == 0 ? "" : "why \(index)"
                }
            }
        }
        let (disagreements, read) = HandCodecHarness.damage(seeds, read: decoded, reference: swiftProtobufs)
        #expect(disagreements.isEmpty, "\(disagreements.prefix(5))")
        // Some mutations (a value's byte, say) leave a readable put: the check above ran.
        #expect(read > 1_000)
    }
}
