import ArgumentParser
import Foundation
import SyncClient
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

struct BenchFanoutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fanout",
        abstract: "Changes delivered per second to subscriber processes, and write-to-delivery latency.",
        discussion: """
            Starts each subscriber as a process of its own (syncctl bench subscriber), watching bench/. \
            Values carry their send time, so latency runs from a write's send to each subscriber's \
            receipt. Every delivery is checked: a lost, duplicated or out-of-order change is reported \
            and the command exits 1.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: "Subscriber processes.")
    var subscribers = 8

    @Option(help: "Writing connections.")
    var writers = 1

    @Option(help: "Writes in flight on each writing connection.")
    var pipeline = 16

    @Option(help: "Total writes.")
    var count = 50_000

    @Option(help: "Bytes per value.")
    var valueSize = 100

    @Option(help: "Writes per second, all writers together (default: as fast as possible).")
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
            How each subscriber reads: \(BenchSubscriberCommand.Reader.help). The last two measure \
            the floors under the client's cost per delivered event.
            """)
    var reader = BenchSubscriberCommand.Reader.client

    @Option(
        help: """
            The socket of the syncd the subscribers watch, when it is not the one written to: another \
            host's syncd on the same etcd cluster (--backend etcd), to time a change crossing hosts.
            """)
    var subscriberSocket: String?

    func validate() throws {
        for (name, value) in [("subscribers", subscribers), ("writers", writers), ("pipeline", pipeline), ("count", count)]
        where value < 1 {
            throw ValidationError("--\(name) must be at least 1")
        }
        if let rate, rate < 1 { throw ValidationError("--rate must be at least 1") }
        if valueSize < 48 { throw ValidationError("--value-size must be at least 48") }
    }

    func run() async throws {
        var connections: [SharedStateClient] = []
        for _ in 0..<writers { connections.append(try await options.connect()) }
        let startRevision = try await CommandFailure.exitOnError { try await connections[0].status().revision }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("syncctl-bench-\(getpid())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        if let subscriberSocket {
            // The other host applies revisions as etcd's watch brings them: wait until it has this one.
            let other = try await CommandFailure.exitOnError {
                try await SharedStateClient.connect(.init(socketPath: subscriberSocket, clientName: "syncctl"))
            }
            let deadline = MonotonicClock.nanoseconds + 10_000_000_000
            while try await CommandFailure.exitOnError({ try await other.status().revision }) < startRevision {
                if MonotonicClock.nanoseconds > deadline {
                    CommandFailure.fail("the syncd at \(subscriberSocket) did not reach revision \(startRevision) within 10 s", code: 1)
                }
                try await Task.sleep(for: .milliseconds(2))
            }
            await other.close()
        }
        var children: [BenchChild] = []
        defer { for child in children { child.kill() } }
        for index in 0..<subscribers {
            children.append(try await startSubscriber(after: startRevision, report: "\(directory)/subscriber-\(index)"))
        }

        // Every subscriber is watching once it has seen bench/go.
        _ = try await CommandFailure.exitOnError { try await connections[0].put("bench/go", json: "true") }
        try await waitFor("the subscribers to start watching", children: children) {
            (0..<subscribers).allSatisfy { FileManager.default.fileExists(atPath: "\(directory)/subscriber-\($0).ready") }
        }

        let started = MonotonicClock.nanoseconds
        let cpuStarted = ProcessCPUTime.microseconds
        try await write(using: connections, started: started)
        let writesFinishedAt = MonotonicClock.nanoseconds
        let writerCPU = ProcessCPUTime.microseconds - cpuStarted
        try await waitFor("every subscriber to receive every write", children: children) {
            children.allSatisfy { $0.status != nil }
        }

        var merged = BenchSubscriberCommand.Report()
        var lastDelivery = writesFinishedAt
        for index in 0..<subscribers {
            guard let data = FileManager.default.contents(atPath: "\(directory)/subscriber-\(index)"),
                let report = try? JSONDecoder().decode(BenchSubscriberCommand.Report.self, from: data)
            else {
                CommandFailure.fail(
                    "subscriber \(index) exited with status \(children[index].status.map(String.init) ?? "?") and no report", code: 1)
            }
            merged.delivered += report.delivered
            merged.cpuMicroseconds += report.cpuMicroseconds
            merged.duplicated += report.duplicated
            merged.outOfOrder += report.outOfOrder
            merged.latencies.add(report.latencies)
            lastDelivery = max(lastDelivery, report.finishedAtNanos)
        }
        let lost = count * subscribers - merged.delivered
        let writeRate = Double(count) / (Double(writesFinishedAt - started) / 1e9)
        let deliveryRate = Double(merged.delivered) / (Double(lastDelivery - started) / 1e9)
        let latency = merged.latencies

        if options.json {
            print(
                JSONObject().number("writes_per_sec", Int(writeRate.rounded())).number("delivered_per_sec", Int(deliveryRate.rounded()))
                    .number("p50_us", latency.p50).number("p99_us", latency.p99).number("p999_us", latency.p999)
                    .number("writer_cpu_us", Int(writerCPU)).number("subscriber_cpu_us", Int(merged.cpuMicroseconds)).rendered
            )
        } else {
            let pace = rate.map { "paced at \($0)/s" } ?? "pipeline \(pipeline)"
            print(
                """
                fanout: \(count) writes of \(valueSize) B from \(writers) connection(s), \(pace), to \(subscribers) subscriber processes
                  \(Int(writeRate)) writes/s, \(Int(deliveryRate)) changes delivered/s
                  write-to-delivery latency p50 \(latency.p50) µs, p99 \(latency.p99) µs, p99.9 \(latency.p999) µs
                  CPU \(perOperation(writerCPU, count)) µs per write (this process), \(perOperation(merged.cpuMicroseconds, merged.delivered)) µs per delivery (the subscribers)
                """
            )
        }
        if lost != 0 || merged.duplicated != 0 || merged.outOfOrder != 0 {
            CommandFailure.fail(
                "delivery was wrong: \(lost) lost, \(merged.duplicated) duplicated, \(merged.outOfOrder) out of order",
                code: 1
            )
        }
    }

    private func startSubscriber(after revision: UInt64, report: String) async throws -> BenchChild {
        var arguments = ["bench", "subscriber", "--after", "\(revision)", "--count", "\(count)", "--report", report]
        if globalExecutor { arguments.append("--global-executor") }
        if reader != .client { arguments += ["--reader", reader.rawValue] }
        if let socket = subscriberSocket ?? options.socket { arguments = ["--socket", socket] + arguments }
        let executable = URL(fileURLWithPath: ProcessInfo.processInfo.arguments[0]).standardizedFileURL.path
        return try await BenchChild.start(executable, arguments)
    }

    /// `count` writes from every connection, `pipeline` in flight on each, paced when `rate` is set.
    private func write(using connections: [SharedStateClient], started: UInt64) async throws {
        let next = SequenceCounter()
        let (count, valueSize, rate, globalExecutor) = (self.count, self.valueSize, self.rate, self.globalExecutor)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for connection in connections {
                for _ in 0..<pipeline {
                    group.addTask(executorPreference: globalExecutor ? nil : connection.executor) {
                        while true {
                            let sequence = next.take()
                            if sequence >= count { return }
                            if let rate {
                                let due = started + UInt64(sequence) * 1_000_000_000 / UInt64(rate)
                                let now = MonotonicClock.nanoseconds
                                if due > now {
                                    // On the client's loop, as a C writer sleeps in its own thread.
                                    let delay = Duration.nanoseconds(due - now)
                                    if globalExecutor {
                                        try await Task.sleep(for: delay)
                                    } else {
                                        try await connection.clock.sleep(for: delay)
                                    }
                                }
                            }
                            let value = BenchValue.make(sequence: sequence, size: valueSize)
                            _ = try await CommandFailure.exitOnError {
                                try await connection.put("bench/\(sequence % 1000)", value: value)
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    private func perOperation(_ microseconds: UInt64, _ operations: Int) -> String {
        String(format: "%.2f", Double(microseconds) / Double(max(operations, 1)))
    }

    /// Polls `condition`; fails when a subscriber died or nothing changed for 60 s.
    private func waitFor(_ what: String, children: [BenchChild], _ condition: () -> Bool) async throws {
        let deadline = MonotonicClock.nanoseconds + 60_000_000_000
        while !condition() {
            if let dead = children.first(where: { ($0.status ?? 0) != 0 }), let status = dead.status {
                CommandFailure.fail("a subscriber exited with status \(status) while waiting for \(what)", code: 1)
            }
            if MonotonicClock.nanoseconds > deadline {
                CommandFailure.fail("timed out after 60 s waiting for \(what): changes were lost", code: 1)
            }
            try await Task.sleep(for: .milliseconds(2))
        }
    }
}

/// Hands out 0, 1, 2, … to concurrent writers.
private final class SequenceCounter: Sendable {
    private let next = Atomic<Int>(0)

    func take() -> Int { next.wrappingAdd(1, ordering: .relaxed).oldValue }
}
