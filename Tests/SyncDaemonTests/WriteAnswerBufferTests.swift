import Foundation
import NIOCore
import SharedStateWire
import Testing

@testable import SyncEngine
@testable import SyncServer

/// The answers of one commit share a buffer (`WriteAnswer.appendFrame`: puts and deletes by hand,
/// `WriteAnswerFrame`, whose bytes `SharedStateWireTests` holds to SwiftProtobuf's; the rest
/// through SwiftProtobuf) and read back as the frames a client expects, in order.
@Suite struct WriteAnswerBufferTests {
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
