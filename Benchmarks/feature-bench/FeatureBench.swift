import ArgumentParser
import Foundation
import SharedState

#if canImport(Glibc)
    import Glibc
#endif

/// Runs the benchmarks with the main actor on the thread that reads syncd's socket, as a feature
/// process should (``MainEventLoop``).
@main
enum FeatureBenchMain {
    static func main() {
        MainEventLoop.run { await FeatureBench.main() }
    }
}

/// Benchmarks of the store runtime: how fast `Store.send` reduces, and how long a write in one
/// process takes to reach a reducer in another.
struct FeatureBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feature-bench",
        abstract: "Measures the store runtime.",
        subcommands: [
            SendBench.self, CompositionBench.self, DecodeBench.self, SleepBench.self, EndToEndBench.self, Writer.self,
            SlowConsumerCommand.self,
        ]
    )
}

/// `Store.send` of a trivial action, in-process.
struct SendBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "send", abstract: "Store.send of a trivial action, in-process.")

    @Option(help: "Actions to send.")
    var count = 5_000_000

    @Flag(help: "Print {\"actions_per_sec\":…} only.")
    var json = false

    func validate() throws {
        guard count >= 1 else { throw ValidationError("--count \(count): send at least one action") }
    }

    func run() async throws {
        let rate = await Self.measure(count: count)
        if json {
            print(#"{"actions_per_sec":\#(Int(rate))}"#)
        } else {
            print("Store.send: \(count) trivial actions, \(Int(rate)) actions/s (\(String(format: "%.0f", 1e9 / rate)) ns each)")
        }
    }

    @MainActor
    static func measure(count: Int) -> Double {
        let store = Store(initialState: Tally.State()) { Tally() }
        for _ in 0..<10_000 { store.send(.add) }  // warm up
        let start = ContinuousClock.now
        for _ in 0..<count { store.send(.add) }
        let elapsed = ContinuousClock.now - start
        precondition(store.total == count + 10_000, "lost actions")
        return Double(count) / elapsed.seconds
    }
}

/// A write in one process (the `writer` subcommand, a child process) to the reducer run here.
struct EndToEndBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "e2e",
        abstract: "Time from a write in one process to the reducer that sees it in another."
    )

    @Option(help: "syncd's socket.")
    var socket: String?

    @Option(help: "Writes to make.")
    var count = 2_000

    @Option(help: "Writes per second (the writer paces itself).")
    var rate = 1_000

    @Flag(help: "Print {\"p50_us\":…,\"p99_us\":…,\"p999_us\":…} only.")
    var json = false

    @Option(
        help: ArgumentHelp(
            "Write from this program instead of this one's Swift writer: run as PATH e2e-writer SOCKET KEY COUNT RATE.",
            discussion: "scripts/bench/fanout-peer.c is one: a C writer, to tell the Swift writer's share from the reducer's.",
            valueName: "path"))
    var writer: String?

    @Option(
        help: ArgumentHelp(
            "Also write each write's latency to this file, one line each in the writes' order (µs).",
            discussion: "scripts/bench-client-path.sh splits them into stages with it.",
            valueName: "path"))
    var samples: String?

    func validate() throws {
        guard count >= 1 else { throw ValidationError("--count \(count): make at least one write") }
        guard rate >= 1 else { throw ValidationError("--rate \(rate): at least one write per second") }
        if let writer, !FileManager.default.isExecutableFile(atPath: writer) {
            throw ValidationError("--writer \(writer): there is no executable file there")
        }
        if let samples {
            let directory = URL(fileURLWithPath: samples).deletingLastPathComponent().path
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw ValidationError("--samples \(samples): there is no directory \(directory)")
            }
        }
    }

    func run() async throws {
        let socketPath = SharedStateClient.Configuration(socketPath: socket).socketPath
        let key = "bench/e2e/\(getpid())"
        let (latencies, counts) = try await Self.measure(
            socketPath: socketPath, key: key, count: count, rate: rate, writerExecutable: writer)
        guard latencies.count == count else {
            throw ValidationError("the reducer saw \(latencies.count) of \(count) writes")
        }
        if let samples {
            let lines = latencies.map { "\($0)\n" }.joined()
            guard FileManager.default.createFile(atPath: samples, contents: Data(lines.utf8)) else {
                throw ValidationError("--samples \(samples): cannot write the file")
            }
        }
        let sorted = latencies.sorted()
        func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        if json {
            print(
                #"{"p50_us":\#(percentile(0.5)),"p99_us":\#(percentile(0.99)),"p999_us":\#(percentile(0.999)),"#
                    + #""on_reading_thread":\#(counts.onReadingThread),"inside_the_read":\#(counts.insideTheRead),"#
                    + #""out_of_order":\#(counts.outOfOrder),"written_by_reading_thread":\#(counts.writtenByReadingThread)}"#
            )
        } else {
            print(
                "write → reducer in another process, \(count) writes at \(rate)/s: "
                    + "p50 \(percentile(0.5)) µs, p99 \(percentile(0.99)) µs, p99.9 \(percentile(0.999)) µs; "
                    + "\(counts.onReadingThread) of them reduced on the thread that read them from the socket, "
                    + "\(counts.insideTheRead) inside the read itself; \(counts.outOfOrder) out of order; "
                    + "\(counts.writtenByReadingThread) written by the thread that reads the writer's socket"
            )
        }
    }

    /// What the reducer counted besides the latencies.
    struct Counts {
        /// Writes reduced on the thread that read the socket (all of them under `MainEventLoop`).
        var onReadingThread: Int
        /// Writes reduced inside the socket read that brought them, not by a task it resumed.
        var insideTheRead: Int
        /// Writes that did not come right after the one before.
        var outOfOrder: Int
        /// Writes the writer sent from the thread that reads its socket (its main actor's, under
        /// `MainEventLoop`), without waking another thread.
        var writtenByReadingThread: Int
    }

    /// The latency of each write the reducer saw, and what it counted.
    @MainActor
    static func measure(
        socketPath: String, key: String, count: Int, rate: Int, writerExecutable: String? = nil
    ) async throws -> (latencies: [Double], counts: Counts) {
        let client = try await SharedStateClient.connect(.init(socketPath: socketPath, clientName: "feature-bench"))
        defer { Task { await client.close() } }
        let store = Store(initialState: Probe.State(key: key)) {
            Probe(readsOnThisThread: { client.readsOnThisThread })
        } withDependencies: {
            $0.sharedState = client
        }
        store.send(.start)
        // Polled rather than observed: an observer would compare the growing state on every action.
        while !store.isWatching { try await Task.sleep(for: .milliseconds(1)) }

        let writer = Process()
        if let writerExecutable {
            writer.executableURL = URL(fileURLWithPath: writerExecutable)
            writer.arguments = ["e2e-writer", socketPath, key, "\(count)", "\(rate)"]
        } else {
            writer.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            writer.arguments = ["writer", "--socket", socketPath, "--key", key, "--count", "\(count)", "--rate", "\(rate)"]
        }
        let report = Pipe()
        writer.standardOutput = report
        try writer.run()
        while store.latencies.count < count {
            if !writer.isRunning {
                guard writer.terminationStatus == 0 else { throw ValidationError("the writer failed") }
                // Give the last writes a moment, then count what arrived.
                try await Task.sleep(for: .milliseconds(500))
                break
            }
            // Seldom: each wake-up of the harness takes a core from the measured path.
            try await Task.sleep(for: .milliseconds(50))
        }
        writer.waitUntilExit()
        let written = String(decoding: report.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let result = (
            store.latencies,
            Counts(
                onReadingThread: store.onReadingThread, insideTheRead: store.insideTheRead, outOfOrder: store.outOfOrder,
                writtenByReadingThread: Int(written.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            )
        )
        store.shutDown()
        return result
    }
}

/// Writes `count` values holding their send time, paced at `rate` per second, from the main
/// actor, as a feature's main-actor code would; prints how many left from the thread that reads
/// the socket.
struct Writer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "writer", abstract: "The writing side of e2e.", shouldDisplay: false)

    @Option var socket: String
    @Option var key: String
    @Option var count: Int
    @Option var rate: Int

    @MainActor
    func run() async throws {
        let client = try await SharedStateClient.connect(.init(socketPath: socket, clientName: "feature-bench-writer"))
        let interval = Duration.seconds(1) / rate
        // The main event loop's timers: `ContinuousClock` would wake the global executor's
        // threads for each sleep (MainEventLoopClock).
        let clock = MainEventLoop.clock
        var next = clock.now
        for sequence in 1...count {
            try await clock.sleep(until: next)
            next = next.advanced(by: interval)
            try await client.put(key, json: #"{"sentAtNanos":\#(monotonicNanos()),"sequence":\#(sequence)}"#)
        }
        print(client.requestsWrittenByReadingThread)
        await client.close()
    }
}

/// The trivial feature `send` measures.
struct Tally: Reducer {
    struct State: Equatable { var total = 0 }
    enum Action: Sendable { case add }

    func reduce(into state: inout State, action: Action) -> Effect<Action> {
        state.total += 1
        return .none
    }
}

/// Observes the writer's key and records, in the reducer, how long each write took to arrive.
struct Probe: Reducer, Sendable {
    struct Sample: Codable, Equatable, Sendable {
        var sentAtNanos: UInt64
        var sequence: Int
    }

    struct State: Equatable, Sendable {
        var key: String
        var isWatching = false
        var latencies: [Double] = []
        var onReadingThread = 0
        var insideTheRead = 0
        var outOfOrder = 0
        var lastSequence = 0
    }

    enum Action: Equatable, Sendable {
        case start
        case changed(Result<Sample?, SharedStateError>)
    }

    /// Whether the client's socket is read on the thread the reducer runs on.
    let readsOnThisThread: @Sendable () -> Bool

    func reduce(into state: inout State, action: Action) -> Effect<Action> {
        switch action {
        case .start:
            return .observe(SharedKey<Sample?>(state.key, default: nil)) { .changed($0) }
        case .changed(.success(let sample)):
            state.isWatching = true
            guard let sample else { return .none }
            if sample.sequence != state.lastSequence + 1 { state.outOfOrder += 1 }
            guard sample.sequence > state.lastSequence else { return .none }
            state.lastSequence = sample.sequence
            // Sent by the read itself rather than by the effect's task.
            if withUnsafeCurrentTask(body: { $0 == nil }) { state.insideTheRead += 1 }
            state.latencies.append(Double(monotonicNanos() - sample.sentAtNanos) / 1000)
            if readsOnThisThread() { state.onReadingThread += 1 }
            return .none
        case .changed(.failure):
            return .none
        }
    }
}

/// CLOCK_MONOTONIC, which every process on the machine shares.
func monotonicNanos() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
