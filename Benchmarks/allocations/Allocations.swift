import Benchmark
import FeatureStore
import Foundation
import NIOCore
import SharedState
import SharedStateWire
import SwiftProtobuf
import SyncEngine

/// Allocation benchmarks of the hot path: mallocs per operation, which unlike times do not move
/// with a busy machine. `scripts/allocations.sh check` fails when one exceeds its committed
/// threshold (Benchmarks/Thresholds); times are printed, never judged. See
/// Benchmarks/allocations/README.md.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.mallocCountTotal, .wallClock],
        warmupIterations: 50,
        scalingFactor: .one,
        maxDuration: .seconds(2),
        maxIterations: 2_000,
        // p90 of mallocs per operation: at most its threshold, not one more.
        thresholds: [.mallocCountTotal: .init(relative: [.p90: 0.0], absolute: [.p90: 0])]
    )

    // A lone put through the engine, submitted as a connection submits its turn's writes and
    // answered to it.
    Benchmark(
        "engine-lone-put",
        closure: { benchmark in Fixtures.lonePuts(benchmark, key: "bench/lone", json: #"{"n":1}"#) },
        setup: Fixtures.startEngine, teardown: Fixtures.stopEngine)

    // 16 puts in flight on one connection, submitted and committed together. One more malloc
    // per group is let through: a group the writer thread takes over (when it holds the turn)
    // allocates one more than a group committed on the submitting thread. One more per put is not.
    var perGroup = Benchmark.defaultConfiguration
    perGroup.thresholds = [.mallocCountTotal: .init(relative: [.p90: 0.0], absolute: [.p90: 1])]
    Benchmark(
        "engine-pipelined-group-of-16-puts",
        configuration: perGroup,
        closure: { benchmark in
            let (fixture, receiver) = (Fixtures.engine!, Fixtures.writer)
            let requests = (0..<16).map { WriteRequest.put(key: "bench/\($0)", value: Data(#"{"n":1}"#.utf8), ifVersion: nil) }
            var group: [PendingWrite] = []
            group.reserveCapacity(16)
            for _ in benchmark.scaledIterations {
                var last: UInt64 = 0
                for request in requests {
                    last = Fixtures.nextRequest()
                    group.append(PendingWrite(request: request, origin: .syncd(""), answering: last, to: receiver))
                }
                fixture.submit(group, answeredBy: receiver, upTo: Int(last))
                group.removeAll(keepingCapacity: true)
            }
        }, setup: Fixtures.startEngine, teardown: Fixtures.stopEngine)

    // One put, delivered as an event to 8 connections watching its prefix.
    Benchmark(
        "engine-put-delivered-to-8-watches",
        closure: { benchmark in Fixtures.lonePuts(benchmark, key: "watched/door", json: #"{"locked":true}"#) },
        setup: Fixtures.startEngineWithWatches, teardown: Fixtures.stopEngine)

    // A client's put frame, as syncd's session decodes it.
    Benchmark("wire-put-frame-decoded") { benchmark in
        let payload = Fixtures.putFrame
        for _ in benchmark.scaledIterations {
            blackHole(DecodedPut(frame: payload))
        }
    }

    // A change as a feature gets it: the event's bytes decoded in place into its type.
    Benchmark("client-change-decoded-into-a-feature-value") { benchmark in
        let (payload, key) = (Fixtures.eventFrame, Fixtures.readingKey)
        for _ in benchmark.scaledIterations {
            guard let event = WatchEventFrame(frame: payload) else { fatalError("the event frame did not decode") }
            let batch = WatchBatch(kind: .changes, revision: event.revision, changes: event.changes)
            blackHole(key.value(after: batch))
        }
    }

    // A trivial action sent to a store: reduced at once, no effect.
    Benchmark("store-send-of-a-trivial-action") { benchmark in
        // The store lives on the main actor; the benchmark is only used there meanwhile.
        nonisolated(unsafe) let measured = benchmark
        await MainActor.run {
            let store = Fixtures.store()
            measured.startMeasurement()
            for _ in measured.scaledIterations {
                blackHole(store.send(.tick))
            }
            measured.stopMeasurement()
            store.shutDown()
        }
    }
}

/// What the benchmarks share: the engine of the one that runs, the frames they decode.
enum Fixtures {
    nonisolated(unsafe) static var engine: EngineFixture?
    static let writer = CountingReceiver()
    nonisolated(unsafe) private static var watchers: [CountingReceiver] = []
    nonisolated(unsafe) private static var lastRequest: UInt64 = 0

    static func nextRequest() -> UInt64 {
        lastRequest += 1
        return lastRequest
    }

    /// One put of `json` to `key` per iteration, submitted as a connection submits a lone
    /// write, each waited for.
    static func lonePuts(_ benchmark: Benchmark, key: String, json: String) {
        let (fixture, receiver) = (engine!, writer)
        let put = WriteRequest.put(key: key, value: Data(json.utf8), ifVersion: nil)
        for _ in benchmark.scaledIterations {
            let id = nextRequest()
            fixture.submit(
                [PendingWrite(request: put, origin: .syncd(""), answering: id, to: receiver)], answeredBy: receiver, upTo: Int(id))
        }
    }

    @Sendable static func startEngine() async throws {
        engine = try await EngineFixture()
    }

    @Sendable static func startEngineWithWatches() async throws {
        let fixture = try await EngineFixture()
        engine = fixture
        watchers = (0..<8).map { _ in CountingReceiver() }
        for watcher in watchers {
            try await fixture.engine.startWatch(id: 1, prefixes: ["watched/"], start: .now, subscriber: watcher)
        }
    }

    @Sendable static func stopEngine() async throws {
        guard let fixture = engine else { return }
        for watcher in watchers { fixture.engine.removeWatches(of: watcher) }
        watchers = []
        precondition(writer.failed == 0, "a benchmarked write failed")
        try await fixture.tearDown()
        engine = nil
    }

    static let putFrame: ByteBuffer = {
        let frame = Sharedstate_V1_ClientFrame.with {
            $0.request = .with {
                $0.id = 7
                $0.put = .with {
                    $0.key = "climate/living"
                    $0.value = Data(#"{"mode":"heat","target":21.5}"#.utf8)
                }
            }
        }
        return ByteBuffer(bytes: try! frame.serializedBytes() as [UInt8])
    }()

    struct Reading: Codable, Sendable, Equatable {
        var celsius: Double
        var sequence: Int
    }

    static let readingKey = SharedKey("climate/reading", default: Reading(celsius: 0, sequence: 0))

    static let eventFrame: ByteBuffer = {
        let json = try! readingKey.encode(Reading(celsius: 21.5, sequence: 1234))
        let frame = Sharedstate_V1_ServerFrame.with {
            $0.event = .with {
                $0.watchID = 1
                $0.kind = .changes
                $0.revision = 42
                $0.changes = [
                    .with {
                        $0.entry = .with {
                            $0.key = readingKey.name
                            $0.value = json
                            $0.version = 3
                            $0.createRevision = 1
                            $0.modRevision = 42
                        }
                    }
                ]
            }
        }
        return ByteBuffer(bytes: try! frame.serializedBytes() as [UInt8])
    }()

    enum Tick: Sendable { case tick }

    @MainActor static func store() -> Store<Int, Tick> {
        Store(initialState: 0) {
            Reduce<Int, Tick> { count, _ in
                count &+= 1
                return .none
            }
        }
    }
}
