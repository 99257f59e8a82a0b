extension Effect {
    /// The effect, started only once `duration` has passed without another effect under `id`:
    /// each new one cancels the one waiting (and any still running) and waits again.
    ///
    /// ```swift
    /// case .queryChanged(let query):
    ///     state.query = query
    ///     return .run { send in await send(.results(try await search(query))) }
    ///         .debounce(id: CancelID.search, for: .milliseconds(300), clock: clock)
    /// ```
    ///
    /// `.cancel(id:)` cancels it while it waits, like any effect under `id`.
    public func debounce(
        id: some Hashable & Sendable,
        for duration: Duration,
        clock: any Clock<Duration>,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) -> Self {
        if isNone { return self }
        let wait = Self.run(
            operation: { _ in try await clock.sleep(for: duration) },
            fileID: fileID,
            filePath: filePath,
            line: line,
            column: column
        )
        return Self.concatenate(wait, self).cancellable(id: id, cancelInFlight: true)
    }

    /// The effect, started at most once per `interval` under `id`.
    ///
    /// The first effect under `id` starts at once. One made less than `interval` after the last
    /// start waits until `interval` has passed since then; while it waits, later ones are dropped
    /// (`latest: false`: the first of the interval runs) or take its place (`latest: true`: the
    /// last of the interval runs). As with TCA's throttle (a `cancellable(id:cancelInFlight:
    /// true)` around the whole delayed work), an effect under `id` that is kept, whether it starts
    /// at once or waits, cancels the one under `id` still running when it is made: throttle work
    /// that finishes quickly, or give long work an id of its own. `.cancel(id:)` cancels a waiting
    /// one and forgets the interval.
    ///
    /// ```swift
    /// case .dragged(let position):
    ///     return .run { _ in try await sharedState.set(.knob, to: position) }
    ///         .throttle(id: CancelID.publish, for: .milliseconds(100), clock: clock, latest: true)
    /// ```
    public func throttle(
        id: some Hashable & Sendable,
        for interval: Duration,
        clock: any Clock<Duration>,
        latest: Bool,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) -> Self {
        if isNone { return self }
        return throttled(id: id, for: interval, clock: clock, latest: latest, location: (fileID, filePath, line, column))
    }

    private func throttled<C: Clock<Duration>>(
        id: some Hashable & Sendable,
        for interval: Duration,
        clock: C,
        latest: Bool,
        location: (StaticString, StaticString, UInt, UInt)
    ) -> Self {
        let effect = self
        @Sendable func starting(at start: C.Instant) -> Self {
            let wait = Self.run(
                operation: { _ in try await clock.sleep(until: start, tolerance: nil) },
                fileID: location.0,
                filePath: location.1,
                line: location.2,
                column: location.3
            )
            return Self.concatenate(wait, effect).cancellable(id: id, cancelInFlight: true)
        }
        return Self(
            .throttle(id: EffectID(id)) { record in
                let now = clock.now
                guard let lastStart = record as? C.Instant, now < lastStart.advanced(by: interval) else {
                    record = now
                    return effect.cancellable(id: id, cancelInFlight: true)
                }
                if now < lastStart {
                    // One is waiting for its turn at `lastStart`.
                    return latest ? starting(at: lastStart) : .none
                }
                let start = lastStart.advanced(by: interval)
                record = start
                return starting(at: start)
            }
        )
    }
}
