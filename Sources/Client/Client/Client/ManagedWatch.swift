import Synchronization

/// A watch as its consumer sees it: one stream that outlives connections. On each new connection
/// it restarts after the last revision it delivered, or from a snapshot when that was compacted.
final class ManagedWatch: Sendable {
    let prefixes: [String]
    private let start: WatchStart
    private let previousValues: Bool
    private let buffer: WatchBuffer
    private let state = Mutex(State())

    private struct State {
        var cursor = WatchCursor()
        var hasDelivered = false
        var needsSnapshot = false
        /// The revision the daemon said the watch started after, before anything was delivered.
        var startedAfter: UInt64?
        /// Where the watch currently runs.
        var connection: Connection?
        var idOnConnection: UInt64 = 0
    }

    init(prefixes: [String], start: WatchStart, previousValues: Bool, buffer: WatchBuffer) {
        self.prefixes = prefixes
        self.start = start
        self.previousValues = previousValues
        self.buffer = buffer
    }

    /// Starts (or restarts) the watch on `connection`. `onLost` is told when the connection ends
    /// under it; every other failure ends the consumer's stream.
    func run(on connection: Connection) {
        let resumeStart: WatchStart = state.withLock { state in
            if state.needsSnapshot { return .snapshot }
            if state.hasDelivered { return .after(state.cursor.revision ?? 0) }
            // Nothing delivered yet: a snapshot is still owed; otherwise resume where it started.
            if start == .snapshot { return .snapshot }
            return state.startedAfter.map(WatchStart.after) ?? start
        }
        let id = connection.startWatch(
            prefixes: prefixes,
            start: resumeStart,
            previousValues: previousValues,
            onStart: { [weak self] revision in self?.started(after: revision) },
            onBatch: { [weak self] batch in self?.deliver(batch) },
            onEnd: { [weak self] error in self?.ended(on: connection, error) }
        )
        state.withLock { state in
            state.connection = connection
            state.idOnConnection = id
        }
    }

    /// Stops the watch on its connection (the consumer went away).
    func cancel() {
        let (connection, id) = state.withLock { state in
            defer { state.connection = nil }
            return (state.connection, state.idOnConnection)
        }
        connection?.cancelWatch(id: id)
    }

    /// Ends the consumer's stream.
    func finish(throwing error: SharedStateError) {
        buffer.finish(throwing: error)
    }

    private func started(after revision: UInt64) {
        state.withLock { state in
            if !state.hasDelivered && state.startedAfter == nil { state.startedAfter = revision }
        }
    }

    private func deliver(_ batch: WatchBatch) {
        let forConsumer = state.withLock { state in
            let isFirst = !state.hasDelivered
            state.hasDelivered = true
            state.needsSnapshot = false
            return state.cursor.absorb(batch, isFirst: isFirst)
        }
        buffer.yield(forConsumer)
    }

    private func ended(on connection: Connection, _ error: SharedStateError) {
        let resumed = state.withLock { $0.hasDelivered || $0.startedAfter != nil }
        switch error.code {
        case .unavailable where connection.router.hasEnded && state.withLock({ $0.connection === connection }):
            // The connection is gone; the client restarts the watch on the next one.
            break
        case .compacted where resumed, .futureRevision where resumed:
            // The resume point is gone (compacted, or syncd lost commits this watch saw, a
            // revision ahead of its own): start again from a snapshot, delivered as a difference.
            state.withLock { $0.needsSnapshot = true }
            run(on: connection)
        default:
            buffer.finish(throwing: error)
        }
    }
}
