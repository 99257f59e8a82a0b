import ArgumentParser
import Foundation
import SharedState

/// What reading a typed key's value costs: `SharedKey.decode` (the in-place decoder, with
/// `JSONDecoder` for what it leaves) against `JSONDecoder` alone, alternated in one run.
struct DecodeBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract: "Cost per value of SharedKey.decode against JSONDecoder, for a small and a larger value."
    )

    @Option(help: "Decodes per measurement.")
    var count = 200_000

    @Option(help: "Measurements of each, alternated.")
    var rounds = 3

    @Flag(help: "Print {\"small_ns\":…,\"small_json_decoder_ns\":…,\"large_ns\":…,\"large_json_decoder_ns\":…} only.")
    var json = false

    func validate() throws {
        guard count >= 10 else { throw ValidationError("--count \(count): decode at least 10 values per measurement") }
        guard rounds >= 1 else { throw ValidationError("--rounds \(rounds): measure at least once") }
    }

    func run() throws {
        let small = Data(#"{"sentAtNanos":48627597086123,"sequence":1234}"#.utf8)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let large = try encoder.encode(Room.example)
        var best: [String: Double] = [:]
        for _ in 0..<rounds {
            for (name, nanoseconds) in [
                ("small_ns", Self.measure(Probe.Sample.self, small, count: count, inPlace: true)),
                ("small_json_decoder_ns", Self.measure(Probe.Sample.self, small, count: count, inPlace: false)),
                ("large_ns", Self.measure(Room.self, large, count: count / 10, inPlace: true)),
                ("large_json_decoder_ns", Self.measure(Room.self, large, count: count / 10, inPlace: false)),
            ] {
                best[name] = min(best[name] ?? .infinity, nanoseconds)
            }
        }
        if json {
            let fields = ["small_ns", "small_json_decoder_ns", "large_ns", "large_json_decoder_ns"].map { #""\#($0)":\#(Int(best[$0]!))"# }
            print("{\(fields.joined(separator: ","))}")
        } else {
            print("a value decoded, best of \(rounds):")
            print(
                "  \(small.count) B, 2 fields: SharedKey.decode \(Int(best["small_ns"]!)) ns, JSONDecoder \(Int(best["small_json_decoder_ns"]!)) ns"
            )
            print(
                "  \(large.count) B, nested:   SharedKey.decode \(Int(best["large_ns"]!)) ns, JSONDecoder \(Int(best["large_json_decoder_ns"]!)) ns"
            )
        }
    }

    /// Nanoseconds per decode.
    static func measure<Value: Codable & Equatable & Sendable>(_ type: Value.Type, _ data: Data, count: Int, inPlace: Bool) -> Double {
        let decoder = JSONDecoder()
        let expected = try! decoder.decode(Value.self, from: data)
        var matches = 0
        let start = ContinuousClock.now
        for _ in 0..<count {
            let value = inPlace ? try! SharedKey<Value>.decode(data, named: "bench") : try! decoder.decode(Value.self, from: data)
            if value == expected { matches += 1 }
        }
        let elapsed = ContinuousClock.now - start
        precondition(matches == count, "a decode gave another value")
        return elapsed.seconds * 1e9 / Double(count)
    }
}

/// A larger feature value: nested structs, an array, optionals and an enum.
private struct Room: Codable, Equatable, Sendable {
    struct Sensor: Codable, Equatable, Sendable {
        var id: String
        var celsius: Double
        var humidity: Double?
        var isOnline: Bool
    }

    enum Mode: String, Codable, Sendable { case off, heating, cooling }

    var name: String
    var floor: Int
    var mode: Mode
    var target: Double
    var sensors: [Sensor]
    var note: String?

    static let example = Room(
        name: "living room", floor: 1, mode: .heating, target: 21.5,
        sensors: (0..<8).map {
            Sensor(id: "sensor-\($0)", celsius: 20 + Double($0) / 10, humidity: $0.isMultiple(of: 2) ? 40 : nil, isOnline: true)
        },
        note: nil)
}
