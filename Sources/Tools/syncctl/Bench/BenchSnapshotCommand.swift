import ArgumentParser
import Foundation
import SyncClient

/// How long a watch takes to start: from the request to its snapshot, for one prefix, many times.
struct BenchSnapshotCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapshot",
        abstract: "Time from starting a watch to receiving its snapshot, for one prefix.",
        discussion: "Run it against a syncd that already holds the keys (for example after `syncctl bench put --keys N`)."
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: "The prefix watched.")
    var prefix: String

    @Option(help: "Watches to start, one after the other.")
    var count = 200

    func validate() throws {
        if count < 1 { throw ValidationError("--count must be at least 1") }
    }

    func run() async throws {
        let client = try await options.connect()
        var latencies = LatencyHistogram()
        var keys = 0
        for _ in 0..<count {
            let started = MonotonicClock.nanoseconds
            var iterator = client.watch(prefixes: [prefix]).makeAsyncIterator()
            let snapshot = try await CommandFailure.exitOnError { try await iterator.next() }
            latencies.record(nanoseconds: MonotonicClock.nanoseconds - started)
            keys = snapshot?.changes.count ?? 0
        }
        await client.close()
        if options.json {
            print(
                JSONObject().number("keys", keys).number("p50_us", latencies.p50).number("p99_us", latencies.p99)
                    .rendered
            )
        } else {
            print(
                """
                snapshot: \(count) watches of \(prefix) (\(keys) keys each)
                  start to snapshot p50 \(latencies.p50) µs, p99 \(latencies.p99) µs
                """
            )
        }
    }
}
