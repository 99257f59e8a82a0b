import Foundation
import NIOCore
import NIOTestUtils
import SharedStateWire
import Testing

@Suite struct FrameDecoderTests {
    private func frame(_ payload: String) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(payload.utf8.count))
        buffer.writeString(payload)
        return buffer
    }

    @Test func splitsAStreamIntoFramesHoweverItArrives() throws {
        let input = [frame("hello"), frame(""), frame(String(repeating: "x", count: 300))]
        let expected = ["hello", "", String(repeating: "x", count: 300)].map { ByteBuffer(string: $0) }
        try ByteToMessageDecoderVerifier.verifyDecoder(
            inputOutputPairs: [(input.reduce(into: ByteBuffer()) { $0.writeImmutableBuffer($1) }, expected)],
            decoderFactory: { FrameDecoder(maxFrameBytes: 1024) }
        )
    }

    @Test func refusesAFrameOverTheLimitBeforeReadingIt() {
        var decoder = FrameDecoder(maxFrameBytes: 16)
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32.max)
        #expect {
            _ = try decoder.decode(buffer: &buffer)
        } throws: { error in
            let error = error as! SharedStateError
            return error.code == .tooLarge && error.message.contains("over the limit of 16 bytes")
        }
    }

    @Test func waitsForTheWholeFrame() throws {
        var decoder = FrameDecoder(maxFrameBytes: 1024)
        var buffer = frame("abcdef")
        buffer.moveWriterIndex(to: buffer.writerIndex - 1)
        #expect(try decoder.decode(buffer: &buffer) == nil)
        #expect(buffer.readerIndex == 0)
    }

    @Test func messagesRoundTripThroughFrames() throws {
        let message = Sharedstate_V1_ClientFrame.with {
            $0.request = .with {
                $0.id = 7
                $0.put = .with {
                    $0.key = "counter/value"
                    $0.value = Data("42".utf8)
                    $0.ifVersion = 0
                }
            }
        }
        var encoded = Frame.encode(message)
        var decoder = FrameDecoder(maxFrameBytes: 1024)
        let payload = try #require(try decoder.decode(buffer: &encoded))
        let decoded = try Frame.decode(Sharedstate_V1_ClientFrame.self, from: payload)
        #expect(decoded == message)
        #expect(decoded.request.put.hasIfVersion)
    }

    @Test func garbageIsAProtocolError() {
        #expect {
            _ = try Frame.decode(Sharedstate_V1_ClientFrame.self, from: ByteBuffer(bytes: [0xFF, 0xFF, 0xFF, 0x01]))
        } throws: { error in
            (error as! SharedStateError).code == .protocolViolation
        }
    }

    @Test func cutsFramesReceivedInReadsCutAnywhere() throws {
        let payloads = ["hello", "", String(repeating: "x", count: 300), "z"]
        var stream = ByteBuffer()
        for payload in payloads { stream.writeImmutableBuffer(frame(payload)) }
        let bytes = stream.readableBytesView
        for first in 0...bytes.count {
            for second in stride(from: first, through: bytes.count, by: 11) {
                var decoder = FrameDecoder(maxFrameBytes: 1024)
                var cut: [String] = []
                for range in [0..<first, first..<second, second..<bytes.count] {
                    decoder.receive(ByteBuffer(bytes: bytes[(bytes.startIndex + range.lowerBound)..<(bytes.startIndex + range.upperBound)]))
                    while let payload = try decoder.next() { cut.append(String(buffer: payload)) }
                }
                #expect(cut == payloads, "cut at \(first) and \(second)")
            }
        }
    }
}
