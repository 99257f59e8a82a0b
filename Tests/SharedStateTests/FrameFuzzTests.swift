import Foundation
import SharedState
import SharedStateWire
import SwiftProtobuf
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A blocking Unix socket client that speaks raw frames.
private final class FrameSocket: Sendable {
    private let descriptor: Int32

    init?(path: String) {
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let connected = UnixSocketAddress(path: path, abstractNames: false)?.withSocketAddress { connect(descriptor, $0, $1) } ?? -1
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if connected != 0 {
            close(descriptor)
            return nil
        }
    }

    /// Sends everything, then closes the sending side, so syncd sees the end of the input
    /// even when a mutation left a frame incomplete.
    func sendAndFinish(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        shutdown(descriptor, Int32(SHUT_WR))
    }

    /// Reads frames until one answers request `id`, or the connection ends; returns every frame.
    /// Throws when syncd sends bytes that are not a ServerFrame.
    func readUntilResponse(to id: UInt64) throws -> [Sharedstate_V1_ServerFrame] {
        var buffer: [UInt8] = []
        var frames: [Sharedstate_V1_ServerFrame] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            while buffer.count >= 4 {
                let length = buffer[0..<4].reduce(0) { $0 << 8 | Int($1) }
                guard buffer.count >= 4 + length else { break }
                let frame = try Sharedstate_V1_ServerFrame(serializedBytes: Array(buffer[4..<4 + length]))
                frames.append(frame)
                buffer.removeFirst(4 + length)
                if case .response(let response) = frame.kind, response.id == id { return frames }
            }
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count <= 0 { return frames }
            buffer += chunk[0..<count]
        }
    }

    deinit { close(descriptor) }
}

/// Property-based fuzzing of everything a client can send: valid frames, mutated at random (bit
/// flips, truncation, insertion, splices, wrong lengths), sent to a real syncd over its socket.
/// Properties: syncd never crashes, everything it sends back is a well-formed ServerFrame, and a
/// bystander client keeps being served. The run lasts FUZZ_SECONDS (default 5) and prints how many
/// inputs it tried and the seed to repeat it.
@Suite(.timeLimit(.minutes(5))) struct FrameFuzzTests {
    private static func frame(_ message: some SwiftProtobufMessage) -> [UInt8] {
        let bytes: [UInt8] = (try? message.serializedBytes()) ?? []
        return withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { Array($0) } + bytes
    }

    private static let hello = frame(Sharedstate_V1_ClientFrame.with { $0.hello = .with { $0.protocolVersion = 1 } })

    private static func request(_ id: UInt64, _ operation: Sharedstate_V1_Request.OneOf_Operation) -> [UInt8] {
        frame(
            Sharedstate_V1_ClientFrame.with {
                $0.request = .with {
                    $0.id = id
                    $0.operation = operation
                }
            }
        )
    }

    /// Valid requests of every kind: the material mutations start from.
    private static let seeds: [[UInt8]] = [
        request(1, .get(.with { $0.key = "fuzz/a" })),
        request(
            2,
            .put(
                .with {
                    $0.key = "fuzz/a"
                    $0.value = Data(#"{"n":[1,2,{"x":"y"}]}"#.utf8)
                })),
        request(
            3,
            .put(
                .with {
                    $0.key = "fuzz/b"
                    $0.value = Data("true".utf8)
                    $0.ifVersion = 0
                    $0.ephemeral = true
                })),
        request(4, .delete(.with { $0.key = "fuzz/a" })),
        request(
            5,
            .list(
                .with {
                    $0.prefix = "fuzz/"
                    $0.limit = 3
                })),
        request(
            6,
            .transaction(
                .with {
                    $0.compares = [
                        .with {
                            $0.key = "fuzz/a"
                            $0.version = 0
                        }
                    ]
                    $0.onSuccess = [
                        .with {
                            $0.put = .with {
                                $0.key = "fuzz/c"
                                $0.value = Data("1".utf8)
                            }
                        }
                    ]
                })),
        request(
            7,
            .watch(
                .with {
                    $0.prefixes = ["fuzz/"]
                    $0.snapshot = true
                })),
        request(8, .watch(.with { $0.afterRevision = 0 })),
        request(9, .cancelWatch(.with { $0.watchID = 7 })),
        request(10, .status(.init())),
        request(11, .history(.with { $0.key = "fuzz/a" })),
        request(12, .compact(.with { $0.revision = 1 })),
        request(13, .transferWrite(.with { $0.data = Data([1, 2, 3]) })),
        request(14, .clients(.init())),
    ]

    /// Crafted frames every syncd must survive, replayed as a regular test.
    static let corpus: [(String, [UInt8])] = [
        ("an empty frame", [0, 0, 0, 0]),
        ("a truncated length prefix", [0, 0]),
        ("a length prefix of 4 GiB", [0xFF, 0xFF, 0xFF, 0xFF]),
        ("a length larger than the bytes that follow", [0, 0, 0, 50, 10, 2, 8]),
        ("garbage bytes", [UInt8](repeating: 0xAB, count: 64)),
        ("a frame cut in the middle", Array(seeds[1].dropLast(5))),
        ("a field of the wrong wire type", [0, 0, 0, 3, 0x12, 0x01, 0x01]),
        ("invalid UTF-8 in a key", [0, 0, 0, 9, 0x12, 0x07, 0x08, 0x01, 0x12, 0x03, 0x0A, 0x01, 0xFF]),
        (
            "a deeply nested value",
            request(
                20,
                .put(
                    .with {
                        $0.key = "deep"
                        $0.value = Data((String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)).utf8)
                    }))
        ),
        (
            "a value of unbalanced brackets",
            request(
                21,
                .put(
                    .with {
                        $0.key = "k"
                        $0.value = Data(String(repeating: "{", count: 5000).utf8)
                    }))
        ),
        ("an enormous key", request(22, .get(.with { $0.key = String(repeating: "k", count: 100_000) }))),
        (
            "a key with control characters",
            request(
                23,
                .put(
                    .with {
                        $0.key = "a\u{0}b\nc"
                        $0.value = Data("1".utf8)
                    }))
        ),
        ("a request without an operation", request(24, .status(.init())).prefix(4) + [0x12, 0x02, 0x08, 0x18]),
        ("a second Hello", hello),
        ("a watch with 10,000 prefixes", request(25, .watch(.with { $0.prefixes = (0..<10_000).map { "p\($0)/" } }))),
        (
            "a transaction of 10,000 operations",
            request(
                26,
                .transaction(
                    .with {
                        $0.onSuccess = (0..<10_000).map { index in .with { $0.delete = .with { $0.key = "k\(index)" } } }
                    }))
        ),
        (
            "a transfer read far past the end",
            request(
                27,
                .transferRead(
                    .with {
                        $0.transferID = 1
                        $0.offset = .max
                        $0.length = .max
                    }))
        ),
    ]

    private static func mutate(_ input: [UInt8], using random: inout SeededGenerator) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            switch Int.random(in: 0..<7, using: &random) {
            case 0 where !bytes.isEmpty:
                let index = Int.random(in: 0..<bytes.count, using: &random)
                bytes[index] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &random)
            case 1 where !bytes.isEmpty:
                bytes.removeLast(Int.random(in: 0...bytes.count, using: &random))
            case 2:
                let index = Int.random(in: 0...bytes.count, using: &random)
                bytes.insert(
                    contentsOf: (0..<Int.random(in: 1...16, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) },
                    at: index)
            case 3 where bytes.count > 4:
                // Rewrite the length prefix.
                let length = UInt32.random(in: 0...UInt32(bytes.count * 2), using: &random)
                withUnsafeBytes(of: length.bigEndian) { for (index, byte) in $0.enumerated() { bytes[index] = byte } }
            case 4:
                bytes += seeds.randomElement(using: &random)!
            case 5 where !bytes.isEmpty:
                let index = Int.random(in: 0..<bytes.count, using: &random)
                bytes[index] = [0x00, 0xFF, 0x7F, 0x80, 0x0A, 0x12, 0x22][Int.random(in: 0..<7, using: &random)]
            default:
                let start = Int.random(in: 0...bytes.count, using: &random)
                bytes.insert(contentsOf: bytes[start...].prefix(32), at: start)
            }
        }
        return bytes
    }

    /// Sends `input` after a Hello on a fresh connection, then a status request as a marker;
    /// checks that what comes back decodes.
    private static func exchange(_ input: [UInt8], socket path: String, greet: Bool) throws {
        guard let connection = FrameSocket(path: path) else { throw SharedStateError(.unavailable, "syncd stopped accepting") }
        connection.sendAndFinish((greet ? hello : []) + input + request(999_999, .status(.init())))
        _ = try connection.readUntilResponse(to: 999_999)
    }

    /// One input, and whether it follows a Hello.
    private struct Exchange: Sendable {
        var input: [UInt8]
        var greets: Bool
    }

    /// Makes `exchanges` in order on a thread of its own, since the socket blocks: a cooperative
    /// thread blocked for the whole run would hold up every test running meanwhile (there is one
    /// per core). Returns each failure with its input.
    private static func exchangeAll(_ exchanges: [Exchange], socket path: String) async -> [(input: [UInt8], error: String)] {
        await withCheckedContinuation { continuation in
            Thread {
                var failures: [(input: [UInt8], error: String)] = []
                for exchange in exchanges {
                    do {
                        try Self.exchange(exchange.input, socket: path, greet: exchange.greets)
                    } catch {
                        failures.append((exchange.input, "\(error)"))
                    }
                }
                continuation.resume(returning: failures)
            }.start()
        }
    }

    @Test func theCraftedCorpusNeitherCrashesSyncdNorDisturbsOthers() async throws {
        try await withDaemon { socket in
            let bystander = try await connect(socket, name: "bystander")
            for (name, input) in Self.corpus {
                let exchanges = [true, false].map { Exchange(input: input, greets: $0) }
                for failure in await Self.exchangeAll(exchanges, socket: socket) {
                    Issue.record("\(name): \(failure.error)")
                }
                try await bystander.put("alive", json: "true")
            }
            #expect(try await bystander.get("alive").version == UInt64(Self.corpus.count))
        }
    }

    @Test func randomlyMutatedFramesNeverCrashSyncd() async throws {
        let environment = ProcessInfo.processInfo.environment
        let seconds = environment["FUZZ_SECONDS"].flatMap(Double.init) ?? 5
        let seed = environment["FUZZ_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
        var random = SeededGenerator(seed: seed)
        var executions = 0
        try await withDaemon { socket in
            let bystander = try await connect(socket, name: "bystander")
            let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
            while ContinuousClock.now < deadline {
                // Between batches, the bystander must still be served.
                let batch = (0..<500).map { _ in
                    Exchange(
                        input: Self.mutate(Self.seeds.randomElement(using: &random)!, using: &random), greets: Bool.random(using: &random))
                }
                if let failure = await Self.exchangeAll(batch, socket: socket).first {
                    Issue.record("input \(failure.input) (seed \(seed)): \(failure.error)")
                    return
                }
                executions += batch.count
                try await bystander.put("alive", json: "\(executions)")
            }
            _ = try await bystander.status()
        }
        print("fuzz: \(executions) inputs in \(seconds) s, no crash (FUZZ_SEED=\(seed))")
        #expect(executions > 0)
    }
}

typealias SwiftProtobufMessage = SwiftProtobuf.Message
