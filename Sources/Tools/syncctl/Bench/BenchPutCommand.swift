import ArgumentParser
import Foundation
import SyncClient

struct BenchPutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put",
        abstract: "Durable puts per second and their round-trip latency."
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: "Client connections.")
    var connections = 4

    @Option(help: "Requests in flight per connection.")
    var pipeline = 16

    @Option(help: "Total puts.")
    var count = 100_000

    @Option(help: "Bytes per value.")
    var valueSize = 100

    @Option(help: "Distinct keys written (bench/0 … bench/K-1).")
    var keys = 1000

    @Option(
        help: """
            Puts per second across all connections, each sent when it is due and timed from then, so \
            that a stall counts for every put it delays. Default: as fast as answers come.
            """
    )
    var rate: Int?

    @Flag(
        help: """
            Run the client tasks on Swift's global executor instead of each client's own \
            (SharedStateClient.executor): the cost of a program that does not prefer it.
            """
    )
    var globalExecutor = false

    @Option(
        help: """
            How the puts are made: client (SharedStateClient, a task per put in flight), nio or write \
            (without SyncClient: each put's frame by hand, every put the window has room for in one \
            write, on a NIO channel or with write(2) on a blocking socket, as the C peer writes; the \
            floors under the client's cost per put).
            """
    )
    var writer = Writer.client

    /// How `bench put` makes its puts: through SyncClient, or one of the floors under it.
    enum Writer: String, ExpressibleByArgument, CaseIterable {
        case client, nio, write
    }

    @Flag(help: "Write objects of 5 members (under bench/records/), the shape a schema checks.")
    var records = false

    @Flag(
        help: """
            Write them under a schema of 5 properties that governs them (implies --records), set \
            before and removed after: the cost of syncd's check.
            """
    )
    var schema = false

    func validate() throws {
        for (name, value) in [("connections", connections), ("pipeline", pipeline), ("count", count), ("keys", keys)] where value < 1 {
            throw ValidationError("--\(name) must be at least 1")
        }
        if valueSize < 16 { throw ValidationError("--value-size must be at least 16") }
        if let rate, rate < 1 { throw ValidationError("--rate must be at least 1") }
        if rate != nil && writer != .client { throw ValidationError("--rate paces the client's puts: use it with --writer client") }
    }

    func run() async throws {
        var clients: [SharedStateClient] = []
        // The floors write without SyncClient; a schema is still set and removed through it.
        for _ in 0..<(writer == .client ? connections : schema ? 1 : 0) { clients.append(try await options.connect()) }
        let records = records || schema
        let value = records ? BenchValue.makeRecord(sequence: 0, size: valueSize) : BenchValue.make(sequence: 0, size: valueSize)
        let prefix = records ? "bench/records/" : "bench/"
        if schema { try await clients[0].setSchema(prefix, document: BenchValue.recordSchema(size: valueSize)) }

        let started = MonotonicClock.nanoseconds
        let cpuStarted = ProcessCPUTime.microseconds
        let latencies =
            if writer != .client {
                try await CommandFailure.exitOnError {
                    try await BenchFloorWriter.run(
                        writer == .nio ? .nio : .write, socket: SharedStateClient.Configuration(socketPath: options.socket).socketPath,
                        work: .init(connections: connections, pipeline: pipeline, count: count, keys: keys, prefix: prefix, value: value))
                }
            } else {
                try await putThroughTheClient(clients, value: value, prefix: prefix, started: started)
            }
        let seconds = Double(MonotonicClock.nanoseconds - started) / 1e9
        let cpu = ProcessCPUTime.microseconds - cpuStarted
        if schema { try await clients[0].deleteSchema(prefix) }
        let rate = Double(latencies.count) / seconds
        if options.json {
            print(
                JSONObject().number("ops_per_sec", Int(rate.rounded())).number("p50_us", latencies.p50)
                    .number("p99_us", latencies.p99).number("p999_us", latencies.p999).number("max_us", latencies.max)
                    .number("cpu_us", Int(cpu)).rendered
            )
        } else {
            print(
                """
                put: \(latencies.count) puts of \(valueSize) B, \(connections) connections × pipeline \(pipeline)\(self.rate.map { ", paced at \($0)/s" } ?? ""), \(keys) keys
                  \(Int(rate)) puts/s (durable: each acknowledged after its commit)
                  latency p50 \(latencies.p50) µs, p99 \(latencies.p99) µs, p99.9 \(latencies.p999) µs, max \(latencies.max) µs
                  this process's CPU \(String(format: "%.2f", Double(cpu) / Double(max(latencies.count, 1)))) µs per put
                """
            )
        }
    }

    /// Every put through SharedStateClient: `pipeline` tasks per connection, each waiting for its
    /// answer before the next, paced when `rate` is set.
    private func putThroughTheClient(_ clients: [SharedStateClient], value: Data, prefix: String, started: UInt64) async throws
        -> LatencyHistogram
    {
        let workers = connections * pipeline
        let perWorker = count / workers
        let remainder = count % workers
        return try await withThrowingTaskGroup(of: LatencyHistogram.self) { group in
            for worker in 0..<workers {
                let client = clients[worker % connections]
                let operations = perWorker + (worker < remainder ? 1 : 0)
                let (keys, rate, globalExecutor) = (self.keys, self.rate, self.globalExecutor)
                group.addTask(executorPreference: globalExecutor ? nil : client.executor) {
                    var samples = LatencyHistogram()
                    for index in 0..<operations {
                        let sequence = worker + index * workers
                        let key = prefix + String(sequence % keys)
                        var sent = MonotonicClock.nanoseconds
                        if let rate {
                            // Timed from when it was due: a put held up by the one before waited too.
                            let due = started + UInt64(sequence) * 1_000_000_000 / UInt64(rate)
                            if due > sent {
                                // On the client's loop, as a C writer sleeps in its own thread.
                                let delay = Duration.nanoseconds(due - sent)
                                if globalExecutor { try await Task.sleep(for: delay) } else { try await client.clock.sleep(for: delay) }
                            }
                            sent = due
                        }
                        try await client.put(key, value: value)
                        samples.record(nanoseconds: MonotonicClock.nanoseconds - sent)
                    }
                    return samples
                }
            }
            return try await group.reduce(into: LatencyHistogram()) { $0.add($1) }
        }
    }
}
