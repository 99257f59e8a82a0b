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

    /// How a subscriber reads its watch: through SyncClient, or one of the floors under it.
    enum Reader: String, ExpressibleByArgument, CaseIterable {
        /// SyncClient's watch, iterated with `for try await`: what a Swift program gets.
        case client
        /// A NIO channel that cuts and decodes the frames as SyncClient does, and nothing else:
        /// the floor of a client built on NIO.
        case nio
        /// A thread calling read(2) on a blocking socket, as the C peer does, then the same
        /// cutting and decoding: the floor of Swift's decoding without NIO.
        case read

        static let help = """
            client (SyncClient's watch), nio (a NIO channel decoding the frames, without SyncClient: \
            its floor) or read (read(2) on a blocking socket, as the C peer reads, then the same decoding)
            """
    }

    @OptionGroup var options: GlobalOptions

    @Option(help: "Deliver the changes after this revision.")
    var after: UInt64

    @Option(help: "Writes to expect.")
    var count: Int

    @Flag(help: "Watch from Swift's global executor instead of the client's own.")
    var globalExecutor = false

    @Option(help: "How to read the watch: \(BenchSubscriberCommand.Reader.help)")
    var reader = Reader.client

    @Option(help: "Where to write the report; <report>.ready is created when watching.")
    var report: String

    func run() async throws {
        guard reader == .client else {
            let socket = SharedStateClient.Configuration(socketPath: options.socket).socketPath
            let tally = BenchSubscriberTally(count: count, readyFile: self.report + ".ready")
            let report = try await CommandFailure.exitOnError {
                try await BenchFloorReader.run(reader == .nio ? .nio : .read, socket: socket, after: after, tally: tally)
            }
            try JSONEncoder().encode(report).write(to: URL(fileURLWithPath: self.report))
            return
        }
        let client = try await options.connect()
        var tally = BenchSubscriberTally(count: count, readyFile: self.report + ".ready")
        do {
            try await withTaskExecutorPreference(globalExecutor ? nil : client.executor) {
                for try await batch in client.watch(prefixes: ["bench/"], start: .after(after)) where batch.kind != .progress {
                    tally.take(revision: batch.revision, changes: batch.changes, receivedAt: MonotonicClock.nanoseconds)
                    if tally.isComplete { break }
                }
            }
        } catch let error as SharedStateError {
            CommandFailure.fail(error.message, code: CommandFailure.exitCode(for: error))
        }
        try JSONEncoder().encode(tally.finish()).write(to: URL(fileURLWithPath: self.report))
        await client.close()
    }
}
