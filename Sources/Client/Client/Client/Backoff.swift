/// The delays between attempts to reach syncd: doubling from `initial` up to `maximum`, each with
/// jitter (half of it fixed, half random), so that clients that lost syncd together do not all
/// knock again at the same instant when it comes back. The client's reconnection and
/// `FeatureHost`'s first connection use it.
package struct Backoff: Sendable {
    private var current: Duration
    private let maximum: Duration

    /// Delays from `initial` (the first, before jitter) to `maximum`.
    package init(initial: Duration, maximum: Duration) {
        self.current = min(initial, maximum)
        self.maximum = maximum
    }

    /// The next delay to wait, between half of the current step and all of it; the step then
    /// doubles, up to the maximum.
    package mutating func next<Generator: RandomNumberGenerator>(using generator: inout Generator) -> Duration {
        let step = current
        current = min(current * 2, maximum)
        let half = step / 2
        let nanoseconds = Double(half.components.seconds) * 1e9 + Double(half.components.attoseconds) / 1e9
        return half + .nanoseconds(Int64(Double.random(in: 0...1, using: &generator) * nanoseconds))
    }

    /// The next delay, with the system's random numbers.
    package mutating func next() -> Duration {
        var generator = SystemRandomNumberGenerator()
        return next(using: &generator)
    }
}
