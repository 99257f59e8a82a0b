import SharedStateWire

/// Starting and cancelling watches.
extension ClientSession {
    /// Starts a watch: at once, or catching up off the event loop when it replays or its snapshot
    /// is large.
    func watch(_ watch: Sharedstate_V1_WatchRequest, _ call: Call) throws(SharedStateError) -> Step {
        let (id, limits, access) = (call.id, call.limits, call.access)
        try RequestRules.validateWatchPrefixCount(watch.prefixes.count, limits: limits)
        for prefix in watch.prefixes { try KeyRules.validatePrefix(prefix, limits: limits) }
        try requireSomeRead(under: watch.prefixes, access)
        if engine.watchCount(of: writer) >= limits.maxWatchesPerConnection {
            throw SharedStateError(
                .limitReached,
                "this connection already has \(limits.maxWatchesPerConnection) watches, the limit; cancel one first"
            )
        }
        let start: WatchStart =
            switch watch.start {
            case .snapshot(true): .snapshot
            case .afterRevision(let revision): .after(revision)
            case .snapshot(false), nil: .now
            }
        let catchUp = try engine.beginWatch(
            id: id,
            prefixes: watch.prefixes,
            start: start,
            previousValues: watch.previousValues,
            readable: readFilter(access),
            ending: endingCheck(prefixes: watch.prefixes),
            subscriber: writer
        )
        guard let catchUp else { return .next }
        let engine = self.engine
        return suspend(id) { () async throws(SharedStateError) in
            try await engine.catchUp(catchUp)
            return nil
        }
    }

    /// Ends one of this connection's watches.
    func cancelWatch(_ cancel: Sharedstate_V1_CancelWatchRequest, _ call: Call) throws(SharedStateError) -> Step {
        let id = call.id
        guard engine.cancelWatch(id: cancel.watchID, of: writer) else {
            throw SharedStateError(.notFound, "no watch with id \(cancel.watchID) on this connection")
        }
        respond(id) { $0.cancelWatch = .init() }
        return .next
    }
}
