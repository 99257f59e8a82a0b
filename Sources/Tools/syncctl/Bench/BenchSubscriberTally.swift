import Foundation
import SyncClient

/// What a `bench fanout` subscriber counts of each change it is given, whoever reads it
/// (SyncClient's watch, or one of ``BenchFloorReader``'s readers): the same work per change, so
/// that the readers' CPU differs only by how they read.
struct BenchSubscriberTally {
    private(set) var report = BenchSubscriberCommand.Report()
    private let count: Int
    private let readyFile: String
    private var seen: [Bool]
    private var lastRevision: UInt64 = 0
    /// This process's CPU time when `bench/go` arrived, µs.
    private var cpuStarted = ProcessCPUTime.microseconds

    init(count: Int, readyFile: String) {
        self.count = count
        self.readyFile = readyFile
        self.seen = [Bool](repeating: false, count: count)
    }

    /// Whether every write was delivered.
    var isComplete: Bool { report.delivered == count }

    /// Counts the changes of one revision, received at `now`.
    mutating func take(revision: UInt64, changes: [Change], receivedAt now: UInt64) {
        if revision <= lastRevision { report.outOfOrder += 1 }
        lastRevision = revision
        for change in changes {
            if change.key == "bench/go" {
                _ = FileManager.default.createFile(atPath: readyFile, contents: nil)
                cpuStarted = ProcessCPUTime.microseconds
                continue
            }
            guard let (sentAt, sequence) = BenchValue.parse(change.entry.value), sequence < count else { continue }
            if seen[sequence] {
                report.duplicated += 1
            } else {
                seen[sequence] = true
                report.delivered += 1
                report.latencies.record(nanoseconds: now &- sentAt)
            }
        }
    }

    /// The report, with the time and CPU from `bench/go` to now.
    mutating func finish() -> BenchSubscriberCommand.Report {
        report.finishedAtNanos = MonotonicClock.nanoseconds
        report.cpuMicroseconds = ProcessCPUTime.microseconds - cpuStarted
        return report
    }
}
