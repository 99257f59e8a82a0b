import ArgumentParser
import EtcdClient
import Foundation
import Synchronization

/// Puts straight to etcd, as a client of etcd sends them (one transaction with one put each,
/// `clients` in flight on one connection): the baseline `syncctl bench put` through a syncd on
/// the same cluster is compared with (`scripts/bench-etcd.sh`).
@main
struct EtcdBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "etcd-bench",
        abstract: "Put rate and latency straight to etcd, the baseline for syncd's etcd backend."
    )

    @Option(help: "The cluster's client URLs, comma-separated.")
    var endpoints: String

    @Option(help: "Puts in flight, each client waiting for its answer before the next.")
    var clients = 16

    @Option(help: "Total puts.")
    var count = 5_000

    @Option(help: "Bytes per value.")
    var valueSize = 20

    @Option(help: "Distinct keys written, under /etcd-bench/.")
    var keys = 1_000

    func run() async throws {
        let client = try EtcdClient(endpoints: EtcdEndpoint.list(parsing: endpoints))
        let value = Data(repeating: UInt8(ascii: "x"), count: valueSize)
        let (count, keys, clients) = (self.count, self.keys, self.clients)
        let next = Counter()
        let latencies = try await withThrowingTaskGroup(of: [UInt64].self) { group in
            group.addTask {
                try await client.run()
                return []
            }
            let started = ContinuousClock.now
            var workers = 0
            var all: [UInt64] = []
            try await withThrowingTaskGroup(of: [UInt64].self) { puts in
                for _ in 0..<clients {
                    puts.addTask {
                        var mine: [UInt64] = []
                        while true {
                            let index = next.take()
                            if index >= count { return mine }
                            let key = Data("/etcd-bench/\(index % keys)".utf8)
                            let sent = ContinuousClock.now
                            _ = try await client.transaction(EtcdTransaction(success: [.put(key: key, value: value)]))
                            let elapsed = ContinuousClock.now - sent
                            mine.append(
                                UInt64(elapsed.components.seconds) * 1_000_000 + UInt64(elapsed.components.attoseconds / 1_000_000_000_000))
                        }
                    }
                    workers += 1
                }
                for try await measured in puts { all += measured }
            }
            let elapsed = ContinuousClock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            print("etcd: \(count) puts of \(valueSize) B, \(workers) clients on one connection")
            print("  \(Int(Double(count) / seconds)) puts/s")
            client.shutDown()
            group.cancelAll()
            return all
        }
        let sorted = latencies.sorted()
        func percentile(_ p: Double) -> UInt64 { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        print("  latency p50 \(percentile(0.5)) µs, p99 \(percentile(0.99)) µs, p99.9 \(percentile(0.999)) µs")
    }
}

/// The next put's index, shared by the clients.
final class Counter: Sendable {
    private let value = Mutex(0)

    func take() -> Int {
        value.withLock { value in
            defer { value += 1 }
            return value
        }
    }
}
