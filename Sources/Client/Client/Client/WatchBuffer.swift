import NIOCore
import Synchronization

/// The batches a watch has produced and its consumer has not taken yet, bounded by the keys the
/// watch selects rather than by the number of changes.
///
/// While the consumer keeps up, each batch is handed over as it is: one revision per batch, in
/// order. When the undelivered batches pass ``Configuration/maxPendingBytes``, they are folded
/// into one batch holding the latest change of each key they touched (a put with its last
/// value, or a delete), and every later batch folds into it until the consumer takes it. The
/// consumer then gets that one batch, as a ``WatchBatch/Kind-swift.struct/resync`` (the
/// difference from what it had seen), or as a snapshot if it had not yet taken the first one. So
/// a slow consumer may miss intermediate values and revisions, never the latest value of a key nor
/// a deletion, and never half a revision.
///
/// It also tells a writer when the consumer has handled a revision (came back for the next
/// batch), which the in-memory shared state uses to give watches syncd's order; and a buffer
/// made ``init(configuration:holdsUntilReleased:)`` holding keeps each batch from its consumer
/// until the producer releases its revision, so that the in-memory shared state can let one
/// watch after another see a change, in the order they were started.
package final class WatchBuffer: Sendable {
    /// How much may wait for the consumer before batches are folded.
    package struct Configuration: Sendable {
        /// Undelivered bytes (keys and values, and a little per change) that start folding.
        package var maxPendingBytes = 1 << 20

        package init() {}
    }

    fileprivate enum End {
        case finished
        case failed(any Error)
    }

    fileprivate struct Handoff {
        let revision: UInt64
        let id: Int
        let continuation: CheckedContinuation<Void, Never>
    }

    fileprivate struct State {
        /// Undelivered batches, oldest first, each with its estimated size.
        var pending = CircularBuffer<(batch: WatchBatch, bytes: Int)>()
        var pendingBytes = 0
        var folded: FoldedBatch?
        var consumer: CheckedContinuation<WatchBatch?, any Error>?
        /// How the stream ends once the pending batches are taken; nil while it goes on.
        var end: End?
        var isTerminated = false
        var onTermination: (@Sendable () -> Void)?
        /// Whether the first batch (a snapshot, for a watch that starts with one) was taken.
        var hasDeliveredFirst = false
        var hasConsumer = false
        /// A hash of the consumer's task, so a write from the consumer itself never waits for it.
        var consumerTask: Int?
        var yieldedRevision: UInt64 = 0
        var deliveredRevision: UInt64 = 0
        var handledRevision: UInt64 = 0
        var handoffs: [Handoff] = []
        var nextHandoff = 0
        var folds = 0
        /// The consumer takes only batches up to this revision (all of them, unless the buffer
        /// holds batches until they are released).
        var releasedRevision: UInt64
        /// Handles a batch in place of the waiting consumer when it is produced on `loop`, the
        /// main actor's (see ``handleOnMainActor(_:)``).
        var mainActorHandler: (loop: any EventLoop, handle: @MainActor @Sendable (WatchBatch) -> Void)?
    }

    private let configuration: Configuration
    private let state: Mutex<State>
    /// Whether batches wait for ``release(through:)`` (the in-memory shared state's watches,
    /// whose writers also wait for the consumer: see ``waitUntilHandled(through:timeout:)``).
    private let holdsUntilReleased: Bool

    /// - Parameter holdsUntilReleased: Whether the consumer gets a batch only once
    ///   ``release(through:)`` released its revision (or the stream ended).
    package init(configuration: Configuration = Configuration(), holdsUntilReleased: Bool = false) {
        self.configuration = configuration
        self.holdsUntilReleased = holdsUntilReleased
        self.state = Mutex(State(releasedRevision: holdsUntilReleased ? 0 : .max))
    }

    /// Whether a consumer is waiting for the next batch now.
    package var hasWaitingConsumer: Bool { state.withLock { $0.consumer != nil } }

    /// The highest revision given to the buffer so far, taken by the consumer or not.
    package var latestRevision: UInt64 { state.withLock { $0.yieldedRevision } }

    /// How many times undelivered batches were folded into one (for tests and diagnostics).
    package var folds: Int { state.withLock { $0.folds } }

    /// Called once, when the producer finishes the stream or the consumer goes away (stops
    /// iterating, or its task is cancelled), whichever comes first.
    package func onTermination(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state in
            guard !state.isTerminated else { return true }
            state.onTermination = handler
            return false
        }
        if runNow { handler() }
    }

    /// Lets `handler` take a batch in place of a consumer on the main actor, under
    /// ``MainEventLoop``: whenever the batch is produced on the main actor's thread (where the
    /// socket is read) while the consumer waits with nothing left to take, the handler runs right
    /// there, inside the read, instead of the batch resuming the consumer's task as a job queued
    /// behind the read. The consumer keeps waiting meanwhile and still gets every other batch, and
    /// the end, in order; nothing reaches the handler once the stream was terminated. Without
    /// ``MainEventLoop`` it does nothing.
    package func handleOnMainActor(_ handler: @escaping @MainActor @Sendable (WatchBatch) -> Void) {
        guard let loop = MainEventLoop.eventLoop else { return }
        state.withLock { $0.mainActorHandler = (loop, handler) }
    }

    // MARK: Producer

    /// Where a batch goes once the buffer let go of its lock.
    private enum Delivery {
        case consumer(CheckedContinuation<WatchBatch?, any Error>)
        case mainActorHandler(@MainActor @Sendable (WatchBatch) -> Void)
    }

    /// Hands `batch` to the consumer, or keeps it (folded, past the bound) until it asks.
    package func yield(_ batch: WatchBatch) {
        let delivery: Delivery? = state.withLock { state in
            guard !state.isTerminated, state.end == nil else { return nil }
            state.yieldedRevision = max(state.yieldedRevision, batch.revision)
            if let consumer = state.consumer, state.pending.isEmpty, state.folded == nil, batch.revision <= state.releasedRevision {
                state.markDelivered(batch)
                if let handler = state.mainActorHandler, handler.loop.inEventLoop {
                    return .mainActorHandler(handler.handle)
                }
                state.consumer = nil
                return .consumer(consumer)
            }
            if state.folded != nil {
                state.folded!.absorb(batch)
                return nil
            }
            let bytes = batch.estimatedBytes
            state.pending.append((batch, bytes))
            state.pendingBytes += bytes
            if state.pendingBytes > configuration.maxPendingBytes {
                let startsWithSnapshot = !state.hasDeliveredFirst && state.pending.first?.batch.kind == .snapshot
                var folded = FoldedBatch(startsWithSnapshot: startsWithSnapshot)
                for pending in state.pending { folded.absorb(pending.batch) }
                state.folded = folded
                state.pending.removeAll()
                state.pendingBytes = 0
                state.folds += 1
            }
            return nil
        }
        switch delivery {
        case .consumer(let consumer):
            consumer.resume(returning: batch)
        case .mainActorHandler(let handler):
            MainActor.assumeIsolated { handler(batch) }
            let handoffs = state.withLock { state in
                state.handledRevision = max(state.handledRevision, batch.revision)
                return state.takeHandoffs()
            }
            for handoff in handoffs { handoff.continuation.resume() }
        case nil:
            break
        }
    }

    /// Lets the consumer take the batches up to `revision`, of a buffer that holds them until
    /// they are released; hands the first over at once when the consumer waits.
    package func release(through revision: UInt64) {
        let delivery = state.withLock { state -> (CheckedContinuation<WatchBatch?, any Error>, WatchBatch)? in
            state.releasedRevision = max(state.releasedRevision, revision)
            guard let consumer = state.consumer, let batch = state.takeReleased() else { return nil }
            state.consumer = nil
            return (consumer, batch)
        }
        if let (consumer, batch) = delivery { consumer.resume(returning: batch) }
    }

    /// Ends the stream after the batches already given: normally, or with `error`.
    package func finish(throwing error: (any Error)? = nil) {
        let (consumer, handoffs) = state.withLock { state -> (CheckedContinuation<WatchBatch?, any Error>?, [Handoff]) in
            guard !state.isTerminated, state.end == nil else { return (nil, []) }
            state.end = error.map(End.failed) ?? .finished
            // What is given before the end is the consumer's to take.
            state.releasedRevision = .max
            guard let consumer = state.consumer else { return (nil, []) }
            state.consumer = nil
            state.isTerminated = true
            return (consumer, state.takeHandoffs())
        }
        for handoff in handoffs { handoff.continuation.resume() }
        if let consumer {
            if let error { consumer.resume(throwing: error) } else { consumer.resume(returning: nil) }
        }
        // The producer is done: its registrations go now, even if the consumer has batches left.
        runTermination()
    }

    /// Returns once the consumer has handled every batch up to `revision` (it asked for the next
    /// one), or at once when it cannot: it never iterated, it went away, or the caller is the
    /// consumer itself. Gives up after `timeout`, so a consumer stuck elsewhere slows a writer
    /// down instead of hanging it.
    package func waitUntilHandled(through revision: UInt64, timeout: Duration) async {
        let task = withUnsafeCurrentTask { $0?.hashValue }
        let id: Int? = state.withLock { state in
            guard state.hasConsumer, !state.isTerminated, state.handledRevision < revision,
                task == nil || task != state.consumerTask
            else { return nil }
            defer { state.nextHandoff += 1 }
            return state.nextHandoff
        }
        guard let id else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.handoff(through: revision, id: id) }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
    }

    private func handoff(through revision: UInt64, id: Int) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state in
                    if state.isTerminated || state.handledRevision >= revision || Task.isCancelled { return true }
                    state.handoffs.append(Handoff(revision: revision, id: id, continuation: continuation))
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let handoff = state.withLock { state -> Handoff? in
                guard let index = state.handoffs.firstIndex(where: { $0.id == id }) else { return nil }
                return state.handoffs.remove(at: index)
            }
            handoff?.continuation.resume()
        }
    }

    // MARK: Consumer

    /// The next batch, nil at the end; ends the watch when the consuming task is cancelled.
    ///
    /// It runs on `isolation`, the caller's actor. A consumer that waits is resumed on its task's
    /// executor preference (``SharedStateClient/executor``: in the read that brought the batch),
    /// or else through Swift's global executor, and then hops back to that actor; under
    /// ``MainEventLoop`` a handler registered with ``handleOnMainActor(_:)`` is called inside the
    /// read instead.
    func next(isolation: isolated (any Actor)? = #isolation) async throws -> WatchBatch? {
        // A batch already waiting is taken without suspending: no continuation, cancellation
        // handler or executor switch. A consumer that keeps up with a burst read in one go takes
        // all but the first this way. (A holding buffer also tracks its consumer's task and the
        // writers waiting for it: it always takes the way below. D50.)
        if !holdsUntilReleased, let batch = takeWaitingBatch() { return batch }
        let task = withUnsafeCurrentTask { $0?.hashValue }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation(isolation: isolation) { (continuation: CheckedContinuation<WatchBatch?, any Error>) in
                let (result, handoffs, terminates) = state.withLock { state -> (Result<WatchBatch?, any Error>?, [Handoff], Bool) in
                    // Coming back for more means everything given so far was handled.
                    state.handledRevision = state.deliveredRevision
                    let handoffs = state.takeHandoffs()
                    state.hasConsumer = true
                    state.consumerTask = task
                    if let batch = state.takeReleased() { return (.success(batch), handoffs, false) }
                    if state.isTerminated || Task.isCancelled {
                        let wasTerminated = state.isTerminated
                        state.isTerminated = true
                        return (.success(nil), handoffs + state.takeHandoffs(), !wasTerminated)
                    }
                    if state.consumer != nil {
                        // AsyncThrowingStream traps here; a clear error is kinder.
                        return (
                            .failure(
                                SharedStateError(
                                    .invalidArgument,
                                    "a watch stream has one consumer at a time; another task is already waiting for its next batch"
                                )
                            ),
                            handoffs, false
                        )
                    }
                    if let end = state.end {
                        state.isTerminated = true
                        let result: Result<WatchBatch?, any Error>
                        switch end {
                        case .finished: result = .success(nil)
                        case .failed(let error): result = .failure(error)
                        }
                        return (result, handoffs + state.takeHandoffs(), true)
                    }
                    state.consumer = continuation
                    return (nil, handoffs, false)
                }
                for handoff in handoffs { handoff.continuation.resume() }
                if let result { continuation.resume(with: result) }
                if terminates { runTermination() }
            }
        } onCancel: {
            terminate()
        }
    }

    /// The batch a consumer coming back would take at once, as ``next(isolation:)`` takes it.
    private func takeWaitingBatch() -> WatchBatch? {
        state.withLock { state in
            guard state.consumer == nil else { return nil }
            // Coming back means everything given so far was handled.
            state.handledRevision = state.deliveredRevision
            state.hasConsumer = true
            return state.takeReleased()
        }
    }

    /// Ends the stream from the consumer's side: it went away or was cancelled.
    func terminate() {
        let (consumer, handoffs, wasTerminated) = state.withLock { state in
            let wasTerminated = state.isTerminated
            state.isTerminated = true
            state.pending.removeAll()
            state.folded = nil
            defer { state.consumer = nil }
            return (state.consumer, state.takeHandoffs(), wasTerminated)
        }
        for handoff in handoffs { handoff.continuation.resume() }
        consumer?.resume(returning: nil)
        if !wasTerminated { runTermination() }
    }

    private func runTermination() {
        let handler = state.withLock { state in
            defer { state.onTermination = nil }
            return state.onTermination
        }
        handler?()
    }
}

extension WatchBuffer.State {
    /// The next batch for the consumer, marked delivered: the folded batch or the oldest pending
    /// one, if released; nil when there is none.
    fileprivate mutating func takeReleased() -> WatchBatch? {
        if let folded, folded.revision <= releasedRevision {
            self.folded = nil
            let batch = folded.batch
            markDelivered(batch)
            return batch
        }
        guard folded == nil, let first = pending.first, first.batch.revision <= releasedRevision else { return nil }
        pending.removeFirst()
        pendingBytes -= first.bytes
        markDelivered(first.batch)
        return first.batch
    }

    fileprivate mutating func markDelivered(_ batch: WatchBatch) {
        hasDeliveredFirst = true
        deliveredRevision = max(deliveredRevision, batch.revision)
    }

    fileprivate mutating func takeHandoffs() -> [WatchBuffer.Handoff] {
        let ready = handoffs.filter { isTerminated || $0.revision <= handledRevision }
        if !ready.isEmpty { handoffs.removeAll { isTerminated || $0.revision <= handledRevision } }
        return ready
    }
}

/// Undelivered batches folded into the latest change of each key they touched.
private struct FoldedBatch: Sendable {
    /// Whether the consumer has seen nothing yet, so the result is a snapshot (puts only).
    let startsWithSnapshot: Bool
    var revision: UInt64 = 0
    var changes: [String: Change] = [:]

    init(startsWithSnapshot: Bool) {
        self.startsWithSnapshot = startsWithSnapshot
    }

    mutating func absorb(_ batch: WatchBatch) {
        revision = max(revision, batch.revision)
        for change in batch.changes {
            if startsWithSnapshot && change.type == .delete {
                changes[change.key] = nil
            } else if startsWithSnapshot {
                // A snapshot carries no previous entries, folded or not.
                var change = change
                change.previous = .unknown
                changes[change.key] = change
            } else if let earlier = changes[change.key] {
                // The folded change stands for both: it comes after what the earlier one found.
                var change = change
                change.previous = earlier.previous
                changes[change.key] = change
            } else {
                changes[change.key] = change
            }
        }
    }

    var batch: WatchBatch {
        let sorted = changes.values.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        return WatchBatch(kind: startsWithSnapshot ? .snapshot : .resync, revision: revision, changes: sorted)
    }
}

extension WatchBatch {
    /// Roughly what the batch holds in memory.
    fileprivate var estimatedBytes: Int {
        changes.reduce(64) { $0 + 64 + $1.key.utf8.count + $1.entry.value.count }
    }
}
