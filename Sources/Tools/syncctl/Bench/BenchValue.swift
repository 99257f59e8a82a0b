import Foundation

/// The values a benchmark writes: JSON carrying the send time and a sequence number, padded to a
/// size, so a watcher can measure latency and detect loss or duplication.
enum BenchValue {
    /// `{"t":<monotonic ns>,"n":<sequence>,"p":"xxx…"}`, padded to at least `size` bytes.
    ///
    /// Written byte by byte into the value's own storage, as the C peer (`fanout-peer`) writes its
    /// values: what `bench fanout` then measures per write is the client library, not the making.
    static func make(sequence: Int, size: Int) -> Data {
        let sentAt = MonotonicClock.nanoseconds
        let headLength = 5 + digitCount(sentAt) + 5 + digitCount(UInt64(sequence)) + 6
        var value = Data(count: max(size, headLength + 2))
        value.withUnsafeMutableBytes { (bytes: UnsafeMutableRawBufferPointer) in
            var at = 0
            func put(_ text: StaticString) {
                text.withUTF8Buffer { for byte in $0 { bytes[at] = byte; at += 1 } }
            }
            func put(_ number: UInt64) {
                let end = at + digitCount(number)
                var rest = number
                at = end
                repeat {
                    at -= 1
                    bytes[at] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                } while rest > 0
                at = end
            }
            put(#"{"t":"#)
            put(sentAt)
            put(#","n":"#)
            put(UInt64(sequence))
            put(#","p":""#)
            while at < bytes.count - 2 { bytes[at] = UInt8(ascii: "x"); at += 1 }
            put(#""}"#)
        }
        return value
    }

    private static func digitCount(_ number: UInt64) -> Int {
        var count = 1
        var rest = number / 10
        while rest > 0 { count += 1; rest /= 10 }
        return count
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

    /// The send time and sequence number of a value made by ``make(sequence:size:)``, read from
    /// its bytes where they lie (as the C peer reads its own).
    static func parse(_ value: Data) -> (sentAt: UInt64, sequence: Int)? {
        value.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> (sentAt: UInt64, sequence: Int)? in
            var numbers = (UInt64(0), UInt64(0))
            var found = 0
            var current: UInt64 = 0
            var isInNumber = false
            for byte in bytes.prefix(64) {
                if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                    current = current &* 10 &+ UInt64(byte - UInt8(ascii: "0"))
                    isInNumber = true
                } else if isInNumber {
                    if found == 0 { numbers.0 = current } else { numbers.1 = current }
                    found += 1
                    current = 0
                    isInNumber = false
                    if found == 2 { break }
                }
            }
            guard found == 2 else { return nil }
            return (numbers.0, Int(numbers.1))
        }
    }
}
