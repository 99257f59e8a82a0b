import Foundation
import SharedState
import Testing

private struct Thermostat: Codable, Equatable, Sendable {
    var target: Double
    var isHeating: Bool
}

/// A value with what the in-place decoder reads itself (nesting, escapes, optionals, a float)
/// and what it leaves to `JSONDecoder` (a `Date`).
private struct Schedule: Codable, Equatable, Sendable {
    struct Slot: Codable, Equatable, Sendable {
        var label: String
        var celsius: Float
        var days: [Int]
    }

    var owner: String
    var slots: [Slot]
    var note: String?
    var updatedAt: Date?
}

extension SharedKey where Value == Int {
    fileprivate static let counter = SharedKey("counter/value", default: 0)
}

@Suite(.timeLimit(.minutes(1))) struct SharedKeyTests {
    @Test func typedValuesRoundTripAndMissingKeysReadAsTheDefault() async throws {
        try await withDaemon { socket in
            let client = try await connect(socket)
            let key = SharedKey("home/thermostat", default: Thermostat(target: 20, isHeating: false))
            #expect(try await client.get(key) == Thermostat(target: 20, isHeating: false))
            try await client.set(key, to: Thermostat(target: 21.5, isHeating: true))
            #expect(try await client.get(key) == Thermostat(target: 21.5, isHeating: true))
            #expect(String(decoding: try await client.get("home/thermostat").value, as: UTF8.self) == #"{"isHeating":true,"target":21.5}"#)
        }
    }

    @Test func concurrentUpdatesFromTwoClientsLoseNothing() async throws {
        try await withDaemon { socket in
            let first = try await connect(socket)
            let second = try await connect(socket)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in [first, second] {
                    group.addTask {
                        for _ in 0..<25 { try await client.update(.counter) { $0 += 1 } }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await first.get(.counter) == 50)
        }
    }

    @Test func valuesStartWithTheCurrentValueThenFollowChanges() async throws {
        try await withDaemon { socket in
            let client = try await connect(socket)
            let writer = try await connect(socket)
            try await writer.set(.counter, to: 5)
            var iterator = client.values(of: .counter).makeAsyncIterator()
            #expect(await iterator.next() == 5)
            try await writer.set(.counter, to: 6)
            #expect(await iterator.next() == 6)
            // A key that only shares the prefix is not this key.
            try await writer.put("counter/value2", json: "99")
            try await writer.put("counter/value", json: #""not a number""#)
            try await writer.delete("counter/value")
            #expect(await iterator.next() == 0)
        }
    }

    @Test func everyKindOfValueComesBackAsJSONDecoderReadsIt() async throws {
        try await withDaemon { socket in
            let client = try await connect(socket)
            let key = SharedKey<Schedule?>("home/schedule", default: nil)
            let plain = Schedule(
                owner: "민지 \"M\" \\ /\n\t😀",
                slots: [.init(label: "아침", celsius: 20.5, days: [1, 2]), .init(label: "", celsius: -0.1, days: [])],
                note: nil, updatedAt: nil)
            let dated = Schedule(owner: "x", slots: [], note: "n", updatedAt: Date(timeIntervalSinceReferenceDate: 1234.5))
            var values = client.values(of: key).makeAsyncIterator()
            #expect(await values.next() == .some(nil))
            for value in [plain, dated] {
                try await client.set(key, to: value)
                #expect(try await client.get(key) == value)
                #expect(await values.next() == .some(value))
                let stored = try await client.get("home/schedule").value
                #expect(try JSONDecoder().decode(Schedule.self, from: stored) == value)
            }
        }
    }

    @Test func undecodableValuesAreReportedNotCrashed() async throws {
        try await withDaemon { socket in
            let client = try await connect(socket)
            try await client.put("counter/value", json: #"{"count":1}"#)
            do {
                _ = try await client.get(.counter)
                Issue.record("decoding should fail")
            } catch let error as SharedStateError {
                #expect(error.code == .invalidArgument)
                #expect(error.message == #"the value of key "counter/value" is not a Int: expected Int, found an object"#)
            }
        }
    }

    /// The issue's Fan: a value written by someone else names the field and the reason.
    @Test func aValueThatDoesNotDecodeNamesThePlaceAndTheReason() throws {
        struct Fan: Codable, Sendable {
            var on: Bool
            var speed: Int
            var rooms: [String] = []
        }
        let fan = SharedKey<Fan>("fan/hall", default: Fan(on: false, speed: 0))
        let cases = [
            (#"{"on":"yes","speed":1}"#, "/on: expected Bool, found a string"),
            (#"{"on":true}"#, "/speed: missing"),
            (#"{"on":true,"speed":null}"#, "/speed: expected Int, found null"),
            (#"{"on":true,"speed":1,"rooms":["a",2]}"#, "/rooms/1: expected String, found an integer"),
            (#"[1]"#, "expected an object, found an array"),
        ]
        for (json, reason) in cases {
            #expect(throws: SharedStateError(.invalidArgument, #"the value of key "fan/hall" is not a Fan: "# + reason), "\(json)") {
                try fan.decode(Data(json.utf8))
            }
        }
    }
}
