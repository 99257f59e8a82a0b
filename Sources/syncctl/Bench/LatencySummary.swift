/// Percentiles of a set of latency samples, in microseconds.
struct LatencySummary {
    var p50: Double
    var p99: Double
    var p999: Double

    init(nanoseconds samples: [UInt64]) {
        let sorted = samples.sorted()
        func percentile(_ fraction: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            let index = min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.up)) - 1)
            return Double(sorted[max(0, index)]) / 1000
        }
        p50 = percentile(0.50)
        p99 = percentile(0.99)
        p999 = percentile(0.999)
    }
}
