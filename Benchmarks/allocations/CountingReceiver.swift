import Dispatch
import NIOCore
import SyncEngine
import SyncServer
import Synchronization

/// A connection's stand-in that only counts: the frames of its watches' events and the answers
/// to its writes, decoding nothing.
final class CountingReceiver: FrameReceiver, @unchecked Sendable {
    let backlog = Backlog()
    let frames = Atomic<Int>(0)
    private let answers = Atomic<Int>(0)
    private let failures = Atomic<Int>(0)
    private let answered = DispatchSemaphore(value: 0)

    func send(_ frames: [ByteBuffer], in batch: inout DeliveryBatch) {
        self.frames.add(frames.count, ordering: .relaxed)
    }

    func receive(_ list: DeliveryRound.AnswerList, in batch: inout DeliveryBatch) {
        var count = 0
        switch list {
        case .one(let answer):
            count = 1
            if case .failure = answer.result { failures.add(1, ordering: .relaxed) }
        case .many(let all):
            count = all.count
            for answer in all { if case .failure = answer.result { failures.add(1, ordering: .relaxed) } }
        }
        answers.add(count, ordering: .releasing)
        answered.signal()
    }

    /// Blocks until `target` answers came in all.
    func wait(untilAnswered target: Int) {
        while answers.load(ordering: .acquiring) < target { answered.wait() }
    }

    /// How many writes were refused or failed: a benchmark of writes that fail measures nothing.
    var failed: Int { failures.load(ordering: .relaxed) }
}
