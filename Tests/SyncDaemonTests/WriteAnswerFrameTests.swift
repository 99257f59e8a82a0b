import Foundation
import NIOCore
import SharedStateWire
import Testing

@testable import SyncEngine
@testable import SyncServer

/// The answers to puts and deletes are written by hand (`WriteAnswer.appendFrame`): their bytes
/// must be SwiftProtobuf's, for every size of their numbers, and the answers of one commit must
/// read back as the frames a client expects, in order.
@Suite struct WriteAnswerFrameTests {
    /// Numbers of every varint length, and 0 (left out of the encoding).
    private static let numbers: [UInt64] = [0, 1, 127, 128, 16_383, 16_384, 1 << 35, UInt64.max]

    @Test func putAndDeleteAnswersAreSwiftProtobufsBytes() {
        for requestID in Self.numbers {
            for revision in Self.numbers {
                for version in Self.numbers {
                    for result: Result<WriteOutcome, SharedStateError> in [
                        .success(.put(revision: revision, version: version)), .success(.delete(revision: revision)),
                    ] {
                        let answer = WriteAnswer(requestID: requestID, result: result)
                        var handWritten = ByteBuffer()
                        answer.appendFrame(to: &handWritten)
                        #expect(handWritten == Frame.encode(answer.frame), "\(answer)")
                    }
                }
            }
        }
    }

    @Test func theAnswersOfACommitShareABufferAndDecodeInOrder() throws {
        let answers = [
            WriteAnswer(requestID: 7, result: .success(.put(revision: 300, version: 2))),
            WriteAnswer(requestID: 8, result: .failure(SharedStateError(.conflict, "version 3 is not 2"))),
            WriteAnswer(requestID: 9, result: .success(.delete(revision: 301))),
            WriteAnswer(requestID: 10, result: .success(.transaction(succeeded: true, revision: 302))),
        ]
        var buffer = ByteBuffer()
        for answer in answers { answer.appendFrame(to: &buffer) }
        for answer in answers {
            let length = buffer.readInteger(as: UInt32.self)
            let payload = try #require(length.flatMap { buffer.readSlice(length: Int($0)) })
            let decoded = try Frame.decode(Sharedstate_V1_ServerFrame.self, from: payload)
            #expect(decoded == answer.frame)
        }
        #expect(buffer.readableBytes == 0)
    }
}
