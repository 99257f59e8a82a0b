import SharedStateWire
import SyncEngine

/// `watch`: starts a watch of prefixes the caller may read: at once, or catching up off the
/// event loop when it replays or its snapshot is large.
extension Sharedstate_V1_WatchRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        let (limits, access, engine) = (call.limits, call.access, session.engine)
        try RequestRules.validateWatchPrefixCount(prefixes.count, limits: limits)
        for prefix in prefixes { try KeyRules.validatePrefix(prefix, limits: limits) }
        try session.requireSomeRead(under: prefixes, access)
        if engine.watchCount(of: session.writer) >= limits.maxWatchesPerConnection {
            throw SharedStateError(
                .limitReached,
                "this connection already has \(limits.maxWatchesPerConnection) watches, the limit; cancel one first"
            )
        }
        let start: WatchStart =
            switch self.start {
            case .snapshot(true): .snapshot
            case .afterRevision(let revision): .after(revision)
            case .snapshot(false), nil: .now
            }
        let catchUp = try engine.beginWatch(
            id: call.id,
            prefixes: prefixes,
            start: start,
            previousValues: previousValues,
            readable: session.readFilter(access),
            subscriber: session.writer
        )
        session.reapplyAccess(since: access)
        guard let catchUp else { return .next }
        return session.suspend(call.id) { () async throws(SharedStateError) in
            try await engine.catchUp(catchUp)
            return nil
        }
    }
}
