import ArgumentParser
import Foundation
import SyncClient
import Synchronization

struct BenchFanoutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fanout",
        abstract: "Changes delivered per second to watchers, and write-to-delivery latency.",
        discussion: """
            Each subscriber is its own connection watching bench/. Every delivery is checked: a lost, \
            duplicated or out-of-order change is reported and the command exits 1.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: "Watching connections.")
    var subscribers = 8

    @Option(help: "Writes in flight on the writer's connection.")
    var pipeline = 16

    @Option(help: "Total writes.")
    var count = 50_000

    @Option(help: "Bytes per value.")
    var valueSize = 100

    func validate() throws {
        for (name, value) in [("subscribers", subscribers), ("pipeline", pipeline), ("count", count)] where value < 1 {
            throw ValidationError("--\(name) must be at least 1")
        }
        if valueSize < 48 { throw ValidationError("--value-size must be at least 48") }
    }

    /// What one subscriber saw.
    struct Delivery: Sendable {
        var delivered = 0
        var duplicated = 0
        var outOfOrder = 0
        var latencies: [UInt64] = []
        var finishedAt: UInt64 = 0
    }

    func run() async throws {
        let writer = try await options.connect()
        let startRevision = try await CommandFailure.exitOnError { try await writer.status().revision }
        var watchers: [SharedStateClient] = []
        for _ in 0..<subscribers { watchers.append(try await options.connect()) }
        let count = self.count
        let valueSize = self.valueSize
        let pipeline = self.pipeline
        let started = MonotonicClock.nanoseconds

        let (deliveries, writesFinishedAt) = try await withThrowingTaskGroup(of: Delivery?.self) { group in
            for watcher in watchers {
                // Starting after the current revision: every write below is delivered, none before.
                let stream = watcher.watch(prefixes: ["bench/"], start: .after(startRevision))
                group.addTask { try await Self.receive(count, from: stream) }
            }
            let nextSequence = SequenceCounter()
            for _ in 0..<pipeline {
                group.addTask {
                    while true {
                        let sequence = nextSequence.take()
                        if sequence >= count { return nil }
                        try await writer.put("bench/\(sequence % 1000)", value: BenchValue.make(sequence: sequence, size: valueSize))
                    }
                }
            }
            var deliveries: [Delivery] = []
            var writesFinishedAt: UInt64 = 0
            var writersLeft = pipeline
            for try await result in group {
                if let result {
                    deliveries.append(result)
                } else {
                    writersLeft -= 1
                    if writersLeft == 0 { writesFinishedAt = MonotonicClock.nanoseconds }
                }
            }
            return (deliveries, writesFinishedAt)
        }

        let delivered = deliveries.reduce(0) { $0 + $1.delivered }
        let lost = count * subscribers - delivered
        let duplicated = deliveries.reduce(0) { $0 + $1.duplicated }
        let outOfOrder = deliveries.reduce(0) { $0 + $1.outOfOrder }
        let lastDelivery = deliveries.map(\.finishedAt).max() ?? started
        let writeRate = Double(count) / (Double(writesFinishedAt - started) / 1e9)
        let deliveryRate = Double(delivered) / (Double(lastDelivery - started) / 1e9)
        let summary = LatencySummary(nanoseconds: deliveries.flatMap(\.latencies))

        if options.json {
            print(
                JSONObject().number("writes_per_sec", Int(writeRate.rounded())).number("delivered_per_sec", Int(deliveryRate.rounded()))
                    .number("p50_us", summary.p50).number("p99_us", summary.p99).number("p999_us", summary.p999).rendered
            )
        } else {
            print(
                """
                fanout: \(count) writes of \(valueSize) B (pipeline \(pipeline)) to \(subscribers) watching connections
                  \(Int(writeRate)) writes/s, \(Int(deliveryRate)) changes delivered/s
                  write-to-delivery latency p50 \(summary.p50) µs, p99 \(summary.p99) µs, p99.9 \(summary.p999) µs
                """
            )
        }
        if lost != 0 || duplicated != 0 || outOfOrder != 0 {
            CommandFailure.fail("delivery was wrong: \(lost) lost, \(duplicated) duplicated, \(outOfOrder) out of order", code: 1)
        }
    }

    /// Consumes a watch until every one of `count` writes arrived, checking order and uniqueness.
    private static func receive(_ count: Int, from stream: AsyncThrowingStream<WatchBatch, Error>) async throws -> Delivery {
        var delivery = Delivery()
        delivery.latencies.reserveCapacity(count)
        var seen = [Bool](repeating: false, count: count)
        var lastRevision: UInt64 = 0
        for try await batch in stream {
            let now = MonotonicClock.nanoseconds
            if batch.revision <= lastRevision { delivery.outOfOrder += 1 }
            lastRevision = batch.revision
            for change in batch.changes {
                guard let (sentAt, sequence) = BenchValue.parse(change.entry.value), sequence < count else { continue }
                if seen[sequence] {
                    delivery.duplicated += 1
                } else {
                    seen[sequence] = true
                    delivery.delivered += 1
                    delivery.latencies.append(now - sentAt)
                }
            }
            if delivery.delivered == count { break }
        }
        delivery.finishedAt = MonotonicClock.nanoseconds
        return delivery
    }
}

/// Hands out 0, 1, 2, … to concurrent writers.
private final class SequenceCounter: Sendable {
    private let next = Atomic<Int>(0)

    func take() -> Int { next.wrappingAdd(1, ordering: .relaxed).oldValue }
}
