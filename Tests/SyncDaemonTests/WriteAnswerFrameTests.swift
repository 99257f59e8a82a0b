import NIOCore
import SharedStateWire
import Testing

@testable import SyncDaemon

/// The frames of write answers, appended by hand for puts and deletes, are SwiftProtobuf's bytes.
@Suite struct WriteAnswerFrameTests {
    @Test func appendedFramesAreSwiftProtobufsFrames() {
        let numbers: [UInt64] = [0, 1, 127, 128, 300, 1 << 40, .max]
        var answers: [WriteAnswer] = []
        for id in numbers {
            for revision in numbers {
                for version in numbers {
                    answers.append(WriteAnswer(requestID: id, result: .success(.put(revision: revision, version: version))))
                }
                answers.append(WriteAnswer(requestID: id, result: .success(.delete(revision: revision))))
                answers.append(WriteAnswer(requestID: id, result: .success(.transaction(succeeded: id % 2 == 0, revision: revision))))
            }
            answers.append(WriteAnswer(requestID: id, result: .failure(SharedStateError(.conflict, "version 3 is not 2"))))
        }
        var appended = ByteBufferAllocator().buffer(capacity: 0)
        var expected = ByteBufferAllocator().buffer(capacity: 0)
        for answer in answers {
            answer.appendFrame(to: &appended)
            var frame = Frame.encode(answer.frame)
            expected.writeBuffer(&frame)
        }
        #expect(appended == expected)
    }
}
