import Foundation
import NIOCore
import Testing

@testable import SharedStateWire

/// A put's request frame is written by hand (`PutRequestFrame`): its bytes must be SwiftProtobuf's
/// for every shape of put a client can make, since syncd reads them as SwiftProtobuf wrote them.
@Suite struct PutRequestFrameTests {
    /// Numbers of every varint length, and 0 (left out, except as an `ifVersion`).
    private static let numbers: [UInt64] = [0, 1, 127, 128, 16_383, 16_384, 1 << 35, UInt64.max]

    private static func swiftProtobufFrame(
        id: UInt64, key: String, value: Data, ifVersion: UInt64?, ephemeral: Bool, cause: String
    ) -> ByteBuffer {
        Frame.encode(
            Sharedstate_V1_ClientFrame.with {
                $0.request = .with {
                    $0.id = id
                    $0.put = .with {
                        $0.key = key
                        $0.value = value
                        if let ifVersion { $0.ifVersion = ifVersion }
                        $0.ephemeral = ephemeral
                        $0.cause = cause
                    }
                }
            })
    }

    @Test func everyShapeOfPutIsSwiftProtobufsBytes() {
        let keys = ["", "k", "door/locked", "zé/ü", String(repeating: "a/", count: 80)]
        // Lengths on both sides of a varint's byte boundaries, up to a value of 20,000 bytes.
        let values = [0, 1, 46, 127, 128, 16_383, 16_384, 20_000].map { Data(repeating: UInt8(ascii: "7"), count: $0) }
        let causes = ["", "door-lock: requestApplied(r7)", String(repeating: "ß", count: 128)]
        var checked = 0
        for id in Self.numbers {
            for key in keys {
                for value in values {
                    for ifVersion in [nil] + Self.numbers {
                        for ephemeral in [false, true] {
                            for cause in causes {
                                let handWritten = PutRequestFrame.encode(
                                    id: id, key: key, value: value, ifVersion: ifVersion, ephemeral: ephemeral, cause: cause)
                                let expected = Self.swiftProtobufFrame(
                                    id: id, key: key, value: value, ifVersion: ifVersion, ephemeral: ephemeral, cause: cause)
                                #expect(
                                    handWritten == expected,
                                    "id \(id), key \(key.utf8.count) B, value \(value.count) B, ifVersion \(String(describing: ifVersion)), ephemeral \(ephemeral), cause \(cause.utf8.count) B"
                                )
                                checked += 1
                            }
                        }
                    }
                }
            }
        }
        #expect(checked == 8 * 5 * 8 * 9 * 2 * 3)
    }

    @Test func aFrameIsItsLengthThenTheRequestSyncdReads() throws {
        var frame = PutRequestFrame.encode(
            id: 42, key: "lights/hall", value: Data(#"{"on":true}"#.utf8), ifVersion: 0, ephemeral: true, cause: "switch")
        let length = frame.readInteger(as: UInt32.self)
        #expect(length.map(Int.init) == frame.readableBytes)
        let decoded = try Frame.decode(Sharedstate_V1_ClientFrame.self, from: frame)
        guard case .request(let request) = decoded.kind, case .put(let put) = request.operation else {
            Issue.record("not a put request: \(decoded)")
            return
        }
        #expect(request.id == 42)
        #expect(put.key == "lights/hall" && put.value == Data(#"{"on":true}"#.utf8))
        #expect(put.hasIfVersion && put.ifVersion == 0)
        #expect(put.ephemeral && put.cause == "switch")
    }
}
