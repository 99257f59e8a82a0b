import Histogram

/// Write-to-receipt latencies in microseconds, kept in an HdrHistogram (3 significant digits) so
/// that subscriber processes can send theirs to the parent and be merged exactly.
struct LatencyHistogram: Codable, Sendable {
    private(set) var histogram = Histogram<UInt64>(highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: .three)

    /// Records one latency given in nanoseconds.
    mutating func record(nanoseconds: UInt64) {
        _ = histogram.record(Swift.max(1, nanoseconds / 1000))
    }

    mutating func add(_ other: LatencyHistogram) {
        histogram.add(other.histogram)
    }

    var count: UInt64 { histogram.totalCount }

    /// The latency at `percentile` (0–100), in microseconds.
    func microseconds(at percentile: Double) -> UInt64 {
        count == 0 ? 0 : histogram.valueAtPercentile(percentile)
    }

    var p50: UInt64 { microseconds(at: 50) }
    var p99: UInt64 { microseconds(at: 99) }
    var p999: UInt64 { microseconds(at: 99.9) }
    /// The longest latency recorded, in microseconds.
    var max: UInt64 { count == 0 ? 0 : histogram.max }
}
