/// When to log a failure that may repeat many times a second (a full disk refuses every commit):
/// the first at once, then at most once per ``interval`` with how many happened since the last
/// line, and once more when it stops. A value; its owner keeps it under a lock.
///
/// ```swift
/// if let count = failures.withLock({ $0.failed(at: .now) }) {
///     logger.error("commit failed", metadata: ["failures": "\(count)"])
/// }
/// ```
package struct RepeatedFailureLog: Sendable {
    /// The least time between two lines.
    package let interval: Duration
    /// Failures since the last line.
    private var unlogged = 0
    /// Failures since the last success.
    private var sinceSuccess = 0
    private var lastLogged: ContinuousClock.Instant?

    package init(interval: Duration = .seconds(10)) {
        self.interval = interval
    }

    /// Counts `count` failures at `now`; returns how many to report when a line is due, nil
    /// otherwise.
    package mutating func failed(at now: ContinuousClock.Instant, count: Int = 1) -> Int? {
        unlogged += count
        sinceSuccess += count
        guard lastLogged.map({ $0.duration(to: now) >= interval }) ?? true else { return nil }
        defer {
            unlogged = 0
            lastLogged = now
        }
        return unlogged
    }

    /// Notes a success; returns how many failures came before it when there were any (for one
    /// line saying it recovered), nil otherwise.
    package mutating func succeeded() -> Int? {
        guard sinceSuccess > 0 else { return nil }
        defer { self = RepeatedFailureLog(interval: interval) }
        return sinceSuccess
    }
}
