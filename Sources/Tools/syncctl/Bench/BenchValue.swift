import Foundation

/// The values a benchmark writes: JSON carrying the send time and a sequence number, padded to a
/// size, so a watcher can measure latency and detect loss or duplication.
enum BenchValue {
    /// `{"t":<monotonic ns>,"n":<sequence>,"p":"xxx…"}`, padded to at least `size` bytes.
    static func make(sequence: Int, size: Int) -> Data {
        let head = #"{"t":\#(MonotonicClock.nanoseconds),"n":\#(sequence),"p":""#
        let padding = max(0, size - head.utf8.count - 2)
        return Data((head + String(repeating: "x", count: padding) + #""}"#).utf8)
    }

    /// `{"t":<monotonic ns>,"n":<sequence>,"on":true,"mode":"heat","p":"xxx…"}`, padded to at
    /// least `size` bytes: an object of 5 members, as configuration values are, for the cost of a
    /// schema's check (``recordSchema(size:)``).
    static func makeRecord(sequence: Int, size: Int) -> Data {
        let head = #"{"t":\#(MonotonicClock.nanoseconds),"n":\#(sequence),"on":true,"mode":"heat","p":""#
        let padding = max(0, size - head.utf8.count - 2)
        return Data((head + String(repeating: "x", count: padding) + #""}"#).utf8)
    }

    /// A schema every value ``makeRecord(sequence:size:)`` makes satisfies, checking each member.
    static func recordSchema(size: Int) -> Data {
        Data(
            #"""
            {"type":"object","required":["t","n","on","mode","p"],"additionalProperties":false,
             "properties":{"t":{"type":"integer","minimum":0},"n":{"type":"integer","minimum":0},
              "on":{"type":"boolean"},"mode":{"enum":["heat","cool","off"]},"p":{"type":"string","maxLength":\#(size)}}}
            """#.utf8)
    }

    /// The send time and sequence number of a value made by ``make(sequence:size:)``.
    static func parse(_ value: Data) -> (sentAt: UInt64, sequence: Int)? {
        var numbers: [UInt64] = []
        var current: UInt64 = 0
        var isInNumber = false
        for byte in value.prefix(64) {
            if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                current = current * 10 + UInt64(byte - UInt8(ascii: "0"))
                isInNumber = true
            } else if isInNumber {
                numbers.append(current)
                current = 0
                isInNumber = false
                if numbers.count == 2 { break }
            }
        }
        guard numbers.count == 2 else { return nil }
        return (numbers[0], Int(numbers[1]))
    }
}
