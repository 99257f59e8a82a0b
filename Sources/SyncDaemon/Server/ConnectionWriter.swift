import NIOCore
import SharedStateWire
import Synchronization

/// The outbound side of one client connection. Frames from every source leave in the order they
/// were produced: watch events from the engine, answers from the writer, responses from the
/// connection's own handler.
///
/// Frames from other threads (the engine's fan-out, the writer's answers) reach the event loop
/// in one task per call and are flushed once per call. Responses made on the event loop are
/// written at once, unless frames from elsewhere are still on their way, and flushed when the
/// handler has read everything the socket had.
///
/// Its queue is bounded by the channel's write-buffer watermarks: above the high mark the
/// connection counts as backlogged (``isBacklogged``) until it drains below the low mark.
final class ConnectionWriter: WatchSubscriber, WriteAnswerTarget {
    private let channel: any Channel
    private let backlogged = Atomic<Bool>(false)
    private let resyncCount = Atomic<UInt64>(0)
    /// Tasks handed to the event loop and not yet run: while any is, a response made on the loop
    /// joins the queue behind them instead of overtaking them.
    private let inFlight = Atomic<Int>(0)
    /// Writes handed to the engine and not yet answered.
    private let owed = Atomic<Int>(0)
    /// Called once nothing is owed any more (at shutdown).
    private let whenSettled = Mutex<(@Sendable () -> Void)?>(nil)
    /// Called on the event loop after answers went out, while ``isWaitingForAnswers`` (the
    /// handler stopped reading until they do).
    private let afterAnswers = Mutex<(@Sendable () -> Void)?>(nil)
    private let waitsForAnswers = Atomic<Bool>(false)

    init(channel: any Channel) {
        self.channel = channel
    }

    var isBacklogged: Bool { backlogged.load(ordering: .relaxed) }

    /// How often this connection fell behind and was resynchronised.
    var resyncs: UInt64 { resyncCount.load(ordering: .relaxed) }

    /// Counts one resynchronisation.
    func countResync() {
        resyncCount.wrappingAdd(1, ordering: .relaxed)
    }

    /// The bytes queued in the channel and not yet written to the socket.
    var queuedBytes: Int {
        get async { (try? await channel.getOption(.bufferedWritableBytes)) ?? 0 }
    }

    /// Records the channel's writability; returns true when the connection just caught up.
    func writabilityChanged(isWritable: Bool) -> Bool {
        backlogged.exchange(!isWritable, ordering: .relaxed) && isWritable
    }

    // MARK: From other threads

    /// Queues frames from the engine; never writes synchronously, since the engine calls it with
    /// its lock held.
    func send(_ frames: [ByteBuffer]) {
        channel.eventLoop.execute(counted(writing(frames)))
    }

    func send(_ frames: [ByteBuffer], in batch: DeliveryBatch) {
        batch.add(on: channel.eventLoop, counted(writing(frames)))
    }

    func receive(_ answers: [WriteAnswer], in batch: DeliveryBatch) {
        let channel = self.channel
        let answering: @Sendable () -> Void = { [self] in
            for answer in answers {
                channel.write(Frame.encode(answer.frame), promise: nil)
            }
            channel.flush()
            if owed.subtract(answers.count, ordering: .acquiringAndReleasing).newValue == 0 {
                whenSettled.withLock { $0.take() }?()
            }
            // Only while the handler waits for it: on the path of every answer otherwise.
            if waitsForAnswers.load(ordering: .relaxed) { afterAnswers.withLock { $0 }?() }
        }
        batch.add(on: channel.eventLoop, counted(answering))
    }

    // MARK: On the event loop

    /// Writes a response made on the event loop, behind anything still on its way; the handler
    /// flushes it with ``flush()``.
    func respond(_ frame: ByteBuffer) {
        channel.eventLoop.assertInEventLoop()
        if inFlight.load(ordering: .acquiring) == 0 {
            channel.write(frame, promise: nil)
        } else {
            channel.eventLoop.execute(counted(writing([frame])))
        }
    }

    /// Flushes the responses written by ``respond(_:)``.
    func flush() {
        channel.flush()
    }

    /// Whether writes handed to the engine still await their answers.
    var owesAnswers: Bool { owed.load(ordering: .acquiring) > 0 }

    /// How many writes handed to the engine await their answers.
    var answersOwed: Int { owed.load(ordering: .acquiring) }

    /// Calls `body` on the event loop each time answers have gone out while
    /// ``isWaitingForAnswers`` is set; nil stops it (the handler clears it when the connection
    /// closes, since `body` holds the handler).
    func afterAnswersGoOut(_ body: (@Sendable () -> Void)?) {
        afterAnswers.withLock { $0 = body }
    }

    /// Whether the handler waits for answers to go out (it stopped reading for too many writes
    /// in flight), so that ``afterAnswersGoOut(_:)``'s callback runs.
    var isWaitingForAnswers: Bool {
        get { waitsForAnswers.load(ordering: .relaxed) }
        set { waitsForAnswers.store(newValue, ordering: .relaxed) }
    }

    /// Counts writes answered some other way than ``receive(_:in:)`` (a restore, answered by its
    /// suspension): on the event loop.
    func answeredElsewhere(_ count: Int) {
        channel.eventLoop.assertInEventLoop()
        if owed.subtract(count, ordering: .acquiringAndReleasing).newValue == 0 {
            whenSettled.withLock { $0.take() }?()
        }
    }

    /// Whether the channel takes more without passing its high watermark.
    var isWritable: Bool { channel.isWritable }

    /// Counts writes handed to the engine, whose answers ``receive(_:in:)`` will get.
    func expectAnswers(_ count: Int) {
        owed.add(count, ordering: .acquiringAndReleasing)
    }

    /// Calls `body` on the event loop once every write handed to the engine has been answered.
    func whenAllAnswered(_ body: @escaping @Sendable () -> Void) {
        channel.eventLoop.assertInEventLoop()
        if owed.load(ordering: .acquiring) == 0 { return body() }
        whenSettled.withLock { $0 = body }
    }

    /// Writes a last frame behind everything queued, then closes the connection.
    func sendLastAndClose(_ frame: ByteBuffer) {
        let channel = self.channel
        channel.eventLoop.execute(
            counted {
                channel.writeAndFlush(frame).whenComplete { _ in channel.close(promise: nil) }
            }
        )
    }

    /// `body`, counted in ``inFlight`` from now until it has run on the event loop; handed to the
    /// loop in order, it runs after every frame queued before it.
    private func counted(_ body: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
        inFlight.add(1, ordering: .acquiringAndReleasing)
        return { [self] in
            body()
            inFlight.subtract(1, ordering: .acquiringAndReleasing)
        }
    }

    /// Writes `frames` and flushes them once.
    private func writing(_ frames: [ByteBuffer]) -> @Sendable () -> Void {
        let channel = self.channel
        return {
            for frame in frames {
                channel.write(frame, promise: nil)
            }
            channel.flush()
        }
    }
}
