import Foundation
import NIOCore
import SharedStateWire
import Testing

/// The put requests the client writes by hand are SwiftProtobuf's bytes, whatever the sizes of
/// their fields (lengths of one and two varint bytes), and syncd's reader (``DecodedPut``) reads
/// them back.
@Suite struct PutRequestFrameTests {
    private static let ids: [UInt64] = [0, 1, 127, 128, 1 << 35, UInt64.max]
    private static let keys = ["", "a", "fan/hall", String(repeating: "k", count: 127), String(repeating: "ü", count: 100)]
    private static let values = [Data(), Data("1".utf8), Data(("\"" + String(repeating: "x", count: 200) + "\"").utf8)]
    private static let versions: [UInt64?] = [nil, 0, 1, 300, UInt64.max]
    private static let causes = ["", "door-lock: requestApplied(r7)", String(repeating: "c", count: 256)]

    @Test func putRequestsAreSwiftProtobufsBytes() {
        var checked = 0
        for id in Self.ids {
            for key in Self.keys {
                for value in Self.values {
                    for ifVersion in Self.versions {
                        for ephemeral in [false, true] {
                            for cause in Self.causes {
                                let byHand = PutRequestFrame.encode(
                                    id: id, key: key, value: value, ifVersion: ifVersion, ephemeral: ephemeral, cause: cause)
                                let bySwiftProtobuf = Frame.encode(
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
                                #expect(
                                    byHand == bySwiftProtobuf,
                                    "id \(id), key of \(key.utf8.count) bytes, value of \(value.count), ifVersion \(String(describing: ifVersion)), ephemeral \(ephemeral), cause of \(cause.utf8.count)"
                                )
                                var payload = byHand
                                payload.moveReaderIndex(forwardBy: 4)
                                #expect(
                                    DecodedPut(frame: payload)
                                        == DecodedPut(
                                            requestID: id, key: key, value: value, ifVersion: ifVersion, isEphemeral: ephemeral,
                                            cause: cause)
                                )
                                checked += 1
                            }
                        }
                    }
                }
            }
        }
        #expect(checked == 6 * 5 * 3 * 5 * 2 * 3)
    }
}
