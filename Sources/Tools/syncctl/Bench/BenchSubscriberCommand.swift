import ArgumentParser
import Foundation
import SyncClient

/// One subscriber process of `bench fanout`: watches `bench/` after a revision, signals ready when
/// the parent's `bench/go` arrives, checks every delivery, and writes a report file.
struct BenchSubscriberCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscriber",
        abstract: "One subscriber of bench fanout (started by it).",
        shouldDisplay: false
    )

    /// What one subscriber saw; the parent merges them.
    struct Report: Codable {
        var delivered = 0
        var duplicated = 0
        var outOfOrder = 0
        var finishedAtNanos: UInt64 = 0
        /// This process's CPU time from `bench/go` to the last delivery, µs.
        var cpuMicroseconds: UInt64 = 0
        var latencies = LatencyHistogram()
    }

    @OptionGroup var options: GlobalOptions

    @Option(help: "Deliver the changes after this revision.")
    var after: UInt64

    @Option(help: "Writes to expect.")
    var count: Int

    @Flag(help: "Watch from Swift's global executor instead of the client's own.")
    var globalExecutor = false

    @Option(help: "Where to write the report; <report>.ready is created when watching.")
    var report: String

    func run() async throws {
        let client = try await options.connect()
        var report = Report()
        // Read once: an ArgumentParser option's getter is not free, and this loop runs per change.
        let count = self.count
        var seen = [Bool](repeating: false, count: count)
        var lastRevision: UInt64 = 0
        var cpuStarted = ProcessCPUTime.microseconds
        do {
            try await withTaskExecutorPreference(globalExecutor ? nil : client.executor) {
                for try await batch in client.watch(prefixes: ["bench/"], start: .after(after)) where batch.kind != .progress {
                    let now = MonotonicClock.nanoseconds
                    if batch.revision <= lastRevision { report.outOfOrder += 1 }
                    lastRevision = batch.revision
                    for change in batch.changes {
                        if change.key == "bench/go" {
                            _ = FileManager.default.createFile(atPath: self.report + ".ready", contents: nil)
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
                    if report.delivered == count { break }
                }
            }
        } catch let error as SharedStateError {
            CommandFailure.fail(error.message, code: CommandFailure.exitCode(for: error))
        }
        report.finishedAtNanos = MonotonicClock.nanoseconds
        report.cpuMicroseconds = ProcessCPUTime.microseconds - cpuStarted
        try JSONEncoder().encode(report).write(to: URL(fileURLWithPath: self.report))
        await client.close()
    }
}
