import NIOCore
import Synchronization

/// Matches what syncd sends to whoever is waiting for it: responses to the calls that sent the
/// requests, events to their watches, and the end of the connection to everyone.
final class ResponseRouter: Sendable {
    private enum Waiter {
        /// Taken out of `waiters` under the lock before it is resumed (by the response's routing
        /// or by ``end(with:)``), so it is resumed once; checked all the same (D4).
        case call(CheckedContinuation<Sharedstate_V1_Response, Error>)
        /// The response to a watch request: only an error matters, it ends the watch.
        case watchStart
        /// A response nobody waits for (the answer to a cancelled watch).
        case ignored
    }

    private struct State {
        var waiters: [UInt64: Waiter] = [:]
        var watches: [UInt64: WatchHandlers] = [:]
        var welcome: CheckedContinuation<Sharedstate_V1_Welcome, Error>?
        var endError: SharedStateError?
    }

    /// Where a watch's batches and its end go.
    struct WatchHandlers: Sendable {
        /// Whether the watch asked for each change's previous entry.
        var previousValues: Bool
        /// The watch started after this revision.
        var onStart: @Sendable (UInt64) -> Void
        var onBatch: @Sendable (WatchBatch) -> Void
        var onEnd: @Sendable (SharedStateError) -> Void
    }

    private let state = Mutex(State())
    private let lastRequestID = Atomic<UInt64>(0)

    /// Whether the connection has ended.
    var hasEnded: Bool { state.withLock { $0.endError != nil } }

    /// A request id never used before on this connection.
    func makeRequestID() -> UInt64 {
        lastRequestID.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// Waits for the Welcome after `send` sends the Hello.
    func awaitWelcome(_ send: () -> Void) async throws -> Sharedstate_V1_Welcome {
        try await withCheckedThrowingContinuation { continuation in
            if let error = state.withLock({ state in
                if state.endError == nil { state.welcome = continuation }
                return state.endError
            }) {
                continuation.resume(throwing: error)
                return
            }
            send()
        }
    }

    /// Registers a call, sends it with `send`, and waits for its response.
    nonisolated(nonsending) func call(id: UInt64, _ send: () -> Void) async throws -> Sharedstate_V1_Response {
        try await withCheckedThrowingContinuation { continuation in
            if let error = state.withLock({ state in
                if state.endError == nil { state.waiters[id] = .call(continuation) }
                return state.endError
            }) {
                continuation.resume(throwing: error)
                return
            }
            send()
        }
    }

    /// Registers a watch whose batches go to `onBatch`; false if the connection has ended
    /// (`onEnd` is then called with the reason).
    func registerWatch(
        id: UInt64,
        previousValues: Bool,
        onStart: @escaping @Sendable (UInt64) -> Void,
        onBatch: @escaping @Sendable (WatchBatch) -> Void,
        onEnd: @escaping @Sendable (SharedStateError) -> Void
    ) -> Bool {
        let error = state.withLock { state in
            if state.endError == nil {
                state.watches[id] = WatchHandlers(previousValues: previousValues, onStart: onStart, onBatch: onBatch, onEnd: onEnd)
                state.waiters[id] = .watchStart
            }
            return state.endError
        }
        if let error {
            onEnd(error)
            return false
        }
        return true
    }

    /// Forgets a watch; true if it was still active (then a cancel request is due).
    func removeWatch(id: UInt64, cancelRequestID: UInt64) -> Bool {
        state.withLock { state in
            guard state.watches.removeValue(forKey: id) != nil, state.endError == nil else { return false }
            state.waiters[id] = nil
            state.waiters[cancelRequestID] = .ignored
            return true
        }
    }

    /// Routes one frame from syncd.
    func route(_ frame: Sharedstate_V1_ServerFrame) {
        switch frame.kind {
        case .welcome(let welcome):
            state.withLock { state in
                defer { state.welcome = nil }
                return state.welcome
            }?.resume(returning: welcome)

        case .response(let response):
            route(response)

        case .event(let event) where event.kind == .ended:
            // syncd ended the watch (a new policy left it nothing to read): it is over.
            let watch = state.withLock { $0.watches.removeValue(forKey: event.watchID) }
            watch?.onEnd(SharedStateError(wireValue: event.error))

        case .event(let event):
            if let watch = watch(event.watchID) { watch.onBatch(WatchBatch(wireValue: event, previousValues: watch.previousValues)) }

        case .fatal(let error):
            end(with: SharedStateError(wireValue: error))

        case nil:
            break
        }
    }

    /// Routes a response: to the call waiting for it, or to the watch it starts.
    func route(_ response: Sharedstate_V1_Response) {
        let (waiter, watch) = state.withLock { state in
            let waiter = state.waiters.removeValue(forKey: response.id)
            var watch: WatchHandlers?
            if case .watchStart = waiter {
                watch = state.watches[response.id]
                if case .error = response.result { state.watches[response.id] = nil }
            }
            return (waiter, watch)
        }
        switch waiter {
        case .call(let continuation):
            continuation.resume(returning: response)
        case .watchStart:
            switch response.result {
            case .error(let error): watch?.onEnd(SharedStateError(wireValue: error))
            case .watch(let started): watch?.onStart(started.revision)
            default: break
            }
        case .ignored, nil:
            break
        }
    }

    /// Routes a watch event read by hand (``WatchEventFrame``).
    func route(_ event: consuming WatchEventFrame) {
        guard let watch = watch(event.watchID) else { return }
        watch.onBatch(WatchBatch(event, previousValues: watch.previousValues))
    }

    /// The handlers of watch `id`, while it is registered.
    private func watch(_ id: UInt64) -> WatchHandlers? {
        state.withLock { $0.watches[id] }
    }

    /// Fails every waiting call and ends every watch with `error`; later calls fail at once.
    func end(with error: SharedStateError) {
        let (waiters, watches, welcome) = state.withLock { state in
            if state.endError == nil { state.endError = error }
            defer {
                state.waiters = [:]
                state.watches = [:]
                state.welcome = nil
            }
            return (state.waiters, state.watches, state.welcome)
        }
        let reason = state.withLock { $0.endError } ?? error
        welcome?.resume(throwing: reason)
        for case .call(let continuation) in waiters.values {
            continuation.resume(throwing: reason)
        }
        for watch in watches.values {
            watch.onEnd(reason)
        }
    }
}
