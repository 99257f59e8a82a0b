import Foundation
import TestSupport
import Testing

@testable import SyncClient

/// Every value is checked against `JSONDecoder`: the in-place decoder gives the same value or
/// declines (nil), and declines exactly where it says it does; ordinary documents must not decline.
@Suite struct InPlaceJSONDecoderTests {
    // MARK: Ordinary values are decoded in place, as JSONDecoder decodes them

    @Test func typicalFeatureValuesDecodeInPlace() throws {
        let values: [SensorReport] = [
            SensorReport(sensor: "kitchen", celsius: 21.5, samples: [1, 2, 3], note: nil, mode: .heating(target: 22), tags: ["a": 1]),
            SensorReport(
                sensor: "é \"quoted\" \\ /slash\n\t\u{1}😀", celsius: -0.0, samples: [], note: "x", mode: .off,
                tags: [:]),
            SensorReport(
                sensor: "", celsius: 1e300, samples: [Int.min, Int.max], note: nil, mode: .heating(target: -3),
                tags: ["z": -1, "b": 0]),
        ]
        for value in values {
            for formatting in [JSONEncoder.OutputFormatting.sortedKeys, [], .prettyPrinted] {
                let encoder = JSONEncoder()
                encoder.outputFormatting = formatting
                let data = try encoder.encode(value)
                #expect(InPlaceJSONDecoder.decode(SensorReport.self, from: data) == value, "\(String(decoding: data, as: UTF8.self))")
            }
        }
    }

    @Test func optionalsArraysAndDictionariesAtTheTop() throws {
        try expectDecodedInPlace(Int?.self, "null")
        try expectDecodedInPlace(Int?.self, " 7 ")
        try expectDecodedInPlace([String].self, #"["a","b\u00e9",""]"#)
        try expectDecodedInPlace([[Int?]].self, "[[1,null],[],[null]]")
        try expectDecodedInPlace([String: Bool].self, #"{"on":true,"off":false}"#)
        try expectDecodedInPlace([Int: String].self, #"{"1":"one","-2":"minus two"}"#)
        try expectDecodedInPlace(Set<Int>.self, "[3,1,2]")
    }

    @Test func randomValuesRoundTripThroughJSONEncoder() throws {
        var generator = SeededGenerator(seed: 38)
        for _ in 0..<300 {
            let value = SensorReport.random(using: &generator)
            let encoder = JSONEncoder()
            encoder.outputFormatting = Bool.random(using: &generator) ? [.sortedKeys, .withoutEscapingSlashes] : []
            let data = try encoder.encode(value)
            #expect(InPlaceJSONDecoder.decode(SensorReport.self, from: data) == value, "\(String(decoding: data, as: UTF8.self))")
        }
    }

    @Test func damagedDocumentsAreDecodedAsJSONDecoderDecodesThemOrLeftToIt() throws {
        // Bytes flipped, dropped, doubled or cut off from valid documents: the in-place decoder
        // must give JSONDecoder's value or nothing, and nothing wherever JSONDecoder refuses.
        var generator = SeededGenerator(seed: 2026)
        let replacements = Array(#"{}[]",:"\/0123456789.eE+-truefalsn \#t\#n"#.utf8) + [0x00, 0x7F, 0xC3, 0xA9, 0xFF]
        var decodedInPlace = 0
        for _ in 0..<3_000 {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            var bytes = Array(try encoder.encode(SensorReport.random(using: &generator)))
            for _ in 0..<Int.random(in: 1...3, using: &generator) where !bytes.isEmpty {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<4, using: &generator) {
                case 0: bytes[index] = replacements.randomElement(using: &generator)!
                case 1: bytes.remove(at: index)
                case 2: bytes.insert(bytes[index], at: index)
                default: bytes.removeSubrange(index...)
                }
            }
            let data = Data(bytes)
            let inPlace = InPlaceJSONDecoder.decode(SensorReport.self, from: data)
            if inPlace != nil { decodedInPlace += 1 }
            guard let expected = try? JSONDecoder().decode(SensorReport.self, from: data) else {
                #expect(inPlace == nil, "JSONDecoder refuses \(String(decoding: data, as: UTF8.self))")
                continue
            }
            if let inPlace { #expect(inPlace == expected, "\(String(decoding: data, as: UTF8.self))") }
        }
        // Some damage leaves a valid document (a digit changed, a space doubled): those decode in place.
        #expect(decodedInPlace > 100)
    }

    @Test func everyDoubleAndFloatComesBackBitForBit() throws {
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<2_000 {
            let double = Double(bitPattern: generator.next())
            let float = Float(bitPattern: UInt32(truncatingIfNeeded: generator.next()))
            if double.isFinite {
                let decoded = try #require(InPlaceJSONDecoder.decode(Double.self, from: JSONEncoder().encode(double)))
                #expect(decoded.bitPattern == double.bitPattern)
            }
            if float.isFinite {
                let decoded = try #require(InPlaceJSONDecoder.decode(Float.self, from: JSONEncoder().encode(float)))
                #expect(decoded.bitPattern == float.bitPattern)
            }
        }
    }

    @Test func decimalTextReadAsFloatOrDoubleMatchesJSONDecoder() throws {
        var generator = SeededGenerator(seed: 11)
        for _ in 0..<2_000 {
            let digits = (0..<Int.random(in: 1...20, using: &generator)).map { _ in String(Int.random(in: 0...9, using: &generator)) }
            let text =
                "\(Int.random(in: 1...9, using: &generator))\(digits.joined()).\(digits.reversed().joined())e\(Int.random(in: -50...40, using: &generator))"
            try expectSameAsJSONDecoder(Float.self, text)
            try expectSameAsJSONDecoder(Double.self, text)
        }
    }

    @Test func aFloatIsRoundedOnceFromItsDigitsAsJSONDecoderRoundsIt() throws {
        // Just above the midpoint of two neighbouring Floats, by less than half a Double's step:
        // rounded through a Double first it would land on the midpoint and round to even instead.
        var generator = SeededGenerator(seed: 5)
        for _ in 0..<500 {
            // 1 to 2^23, where 60 digits write the midpoint exactly.
            let below = Float(bitPattern: UInt32.random(in: 0x3F80_0000...0x4AFF_FFFF, using: &generator) & ~1)
            let midpoint = (Double(below) + Double(below.nextUp)) / 2
            let parts = String(format: "%.60e", midpoint).split(separator: "e")
            let text = "\(parts[0])00000000001e\(parts[1])"
            let expected = try JSONDecoder().decode(Float.self, from: Data(text.utf8))
            #expect(expected == below.nextUp, "\(text)")
            let inPlace = try #require(InPlaceJSONDecoder.decode(Float.self, from: Data(text.utf8)))
            #expect(inPlace.bitPattern == expected.bitPattern, "\(text)")
        }
    }

    // MARK: Where it differs from JSONDecoder, it declines

    @Test(arguments: [
        "1", "-0", "0", "1.0", "1e2", "-1", "1.5", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
        "-9223372036854775809", "255", "256", "true", "\"1\"", "null", "1E400", "1e-400", "0.1", "-0.0", "[1]", "{}",
        "01", "1.", ".5", "+1", "1e", "-", "123456789012345678901234567890", "3.4028235e38", "3.4028236e38", "1e-46",
        "4.9e-324", "2.5e-324",
    ])
    func numbersAreReadAsJSONDecoderReadsThem(text: String) throws {
        try expectSameAsJSONDecoder(Int.self, text)
        try expectSameAsJSONDecoder(Int8.self, text)
        try expectSameAsJSONDecoder(UInt.self, text)
        try expectSameAsJSONDecoder(UInt8.self, text)
        try expectSameAsJSONDecoder(Int64.self, text)
        try expectSameAsJSONDecoder(Double.self, text)
        try expectSameAsJSONDecoder(Float.self, text)
        try expectSameAsJSONDecoder(Bool.self, text)
        try expectSameAsJSONDecoder(String.self, text)
    }

    @Test(arguments: [
        #""plain""#, #""a\nb\t\"\\\/\b\f\r""#, #""\u00e9\u0000""#, #""\ud83d\ude00""#, #""\ud83d""#, #""\udc00""#,
        #""\ud83d\u0041""#, #""\x""#, #""\u12""#, "\"tab\there\"", #""unterminated"#, "\"é😀\"",
    ])
    func stringsAndTheirEscapesAreReadAsJSONDecoderReadsThem(text: String) throws {
        try expectSameAsJSONDecoder(String.self, text)
    }

    @Test func invalidUTF8IsNotDecodedInPlace() throws {
        for bytes: [UInt8] in [[0x22, 0xFF, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xE2, 0x82, 0x22]] {
            #expect(InPlaceJSONDecoder.decode(String.self, from: Data(bytes)) == nil)
            #expect(throws: (any Error).self) { try JSONDecoder().decode(String.self, from: Data(bytes)) }
        }
    }

    @Test(arguments: [
        #"{"celsius":1,"celsius":2}"#,  // a key twice
        #"{"celsius":1,"cel\u0073ius":2}"#,  // the same key, once escaped
        #"{"celsius":1,}"#, #"{"celsius" 1}"#, #"{"celsius":1"#, "{celsius:1}", #"{"celsius":1} x"#, "",
        #"{"celsius":"1"}"#, #"{"celsius":null}"#, #"{"other":1}"#, "[1]",
    ])
    func malformedOrMismatchedDocumentsAreLeftToJSONDecoder(text: String) throws {
        try expectSameAsJSONDecoder(Celsius.self, text)
        #expect(InPlaceJSONDecoder.decode(Celsius.self, from: Data(text.utf8)) == nil)
    }

    @Test func escapedKeysAreFoundByWhatTheyStandFor() throws {
        try expectDecodedInPlace(Celsius.self, #"{"cel\u0073ius":1}"#)
        try expectDecodedInPlace([String: Int].self, #"{"a\"b":1,"a\nb":2,"\ud83d\ude00":3}"#)
        let many = (0..<40).map { #""k\u00e9\#($0)":\#($0)"# }.joined(separator: ",")
        try expectDecodedInPlace([String: Int].self, "{\(many)}")
        #expect(InPlaceJSONDecoder.decode([String: Int].self, from: Data("{\(many),\"k\u{e9}7\":0}".utf8)) == nil)
    }

    @Test func nestingDeeperThanJSONDecoderAcceptsIsLeftToIt() throws {
        // JSONDecoder reads 512 levels and refuses 513.
        func nested(_ depth: Int) -> Data { Data((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8) }
        #expect(InPlaceJSONDecoder.decode(Nested.self, from: nested(512)) != nil)
        #expect(InPlaceJSONDecoder.decode(Nested.self, from: nested(513)) == nil)
        #expect(throws: (any Error).self) { try JSONDecoder().decode(Nested.self, from: nested(513)) }
    }

    @Test func foundationTypesThatJSONDecoderReadsItsOwnWayAreLeftToIt() throws {
        let encoder = JSONEncoder()
        let date = Date(timeIntervalSinceReferenceDate: 12.5)
        #expect(InPlaceJSONDecoder.decode(Date.self, from: try encoder.encode(date)) == nil)
        #expect(InPlaceJSONDecoder.decode([Data].self, from: try encoder.encode([Data([1, 2])])) == nil)
        #expect(InPlaceJSONDecoder.decode(URL.self, from: try encoder.encode(URL(string: "https://example.com")!)) == nil)
        #expect(InPlaceJSONDecoder.decode(Decimal.self, from: Data("1.25".utf8)) == nil)
        // Through a typed key they still decode, by JSONDecoder.
        #expect(try SharedKey<Date>.decode(encoder.encode(date), named: "d") == date)
    }

    @Test func aDeclineThatTheTypeCaughtStillLeavesTheValueToJSONDecoder() throws {
        // `Flexible` tries an integer, then falls back to a double: JSONDecoder and the in-place
        // decoder could disagree on `1.0` as an integer, so the in-place decoder must not answer.
        let data = Data(#"{"value":1.0}"#.utf8)
        #expect(InPlaceJSONDecoder.decode(Flexible.self, from: data) == nil)
        #expect(try SharedKey<Flexible>.decode(data, named: "f") == JSONDecoder().decode(Flexible.self, from: data))
        #expect(InPlaceJSONDecoder.decode(Flexible.self, from: Data(#"{"value":2}"#.utf8)) == .integer(2))
    }

    @Test func codingPathsAreJSONDecodersPaths() throws {
        let data = Data(#"{"outer":{"items":[{"x":1},{"x":2}]}}"#.utf8)
        let inPlace = try #require(InPlaceJSONDecoder.decode(PathRecorder.Root.self, from: data))
        #expect(inPlace == (try JSONDecoder().decode(PathRecorder.Root.self, from: data)))
        #expect(inPlace.outer.items.map(\.path) == ["outer/items/Index 0", "outer/items/Index 1"])
    }

    @Test func superclassesDecodeThroughSuperDecoder() throws {
        let data = Data(#"{"own":2,"super":{"base":1}}"#.utf8)
        let decoded = try #require(InPlaceJSONDecoder.decode(Derived.self, from: data))
        #expect(decoded.base == 1 && decoded.own == 2)
    }

    // MARK: Helpers

    private func expectDecodedInPlace<T: Decodable & Equatable>(_ type: T.Type, _ text: String) throws {
        let expected = try JSONDecoder().decode(T.self, from: Data(text.utf8))
        #expect(InPlaceJSONDecoder.decode(T.self, from: Data(text.utf8)) == expected, "\(text)")
    }

    /// The in-place decoder gives JSONDecoder's value (bit for bit, for floating point) or declines.
    private func expectSameAsJSONDecoder<T: Decodable & Equatable>(_ type: T.Type, _ text: String) throws {
        let data = Data(text.utf8)
        let inPlace = InPlaceJSONDecoder.decode(T.self, from: data)
        guard let expected = try? JSONDecoder().decode(T.self, from: data) else {
            #expect(inPlace == nil, "JSONDecoder refuses \(text) as \(T.self); in place: \(String(describing: inPlace))")
            return
        }
        guard let inPlace else { return }
        #expect(inPlace == expected, "\(text) as \(T.self)")
        if let inPlace = inPlace as? Double, let expected = expected as? Double {
            #expect(inPlace.bitPattern == expected.bitPattern, "\(text) as Double")
        }
        if let inPlace = inPlace as? Float, let expected = expected as? Float {
            #expect(inPlace.bitPattern == expected.bitPattern, "\(text) as Float")
        }
    }
}

// MARK: Types to decode

private struct SensorReport: Codable, Equatable {
    enum Mode: Codable, Equatable {
        case off
        case heating(target: Int)
    }

    var sensor: String
    var celsius: Double
    var samples: [Int]
    var note: String?
    var mode: Mode
    var tags: [String: Int]

    static func random(using generator: inout SeededGenerator) -> SensorReport {
        let alphabet: [Character] = ["a", "Z", "0", " ", "\"", "\\", "/", "\n", "\u{0}", "\u{1F}", "é", "한", "😀", "\u{7F}"]
        func text() -> String {
            String((0..<Int.random(in: 0...12, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
        }
        return SensorReport(
            sensor: text(),
            celsius: Double.random(in: -1e6...1e6, using: &generator),
            samples: (0..<Int.random(in: 0...5, using: &generator)).map { _ in Int.random(in: Int.min...Int.max, using: &generator) },
            note: Bool.random(using: &generator) ? text() : nil,
            mode: Bool.random(using: &generator) ? .off : .heating(target: Int.random(in: -40...40, using: &generator)),
            tags: Dictionary(
                uniqueKeysWithValues: (0..<Int.random(in: 0...20, using: &generator)).map { index in ("\(text())#\(index)", index) })
        )
    }
}

private struct Celsius: Codable, Equatable {
    var celsius: Int
}

private struct Nested: Decodable, Equatable {
    init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        if !container.isAtEnd { _ = try container.decode(Nested.self) }
    }
}

private enum Flexible: Codable, Equatable {
    case integer(Int)
    case double(Double)

    enum CodingKeys: CodingKey { case value }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let integer = try? container.decode(Int.self, forKey: .value) {
            self = .integer(integer)
        } else {
            self = .double(try container.decode(Double.self, forKey: .value))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .integer(let integer): try container.encode(integer, forKey: .value)
        case .double(let double): try container.encode(double, forKey: .value)
        }
    }
}

private enum PathRecorder {
    struct Root: Decodable, Equatable { var outer: Outer }
    struct Outer: Decodable, Equatable { var items: [Item] }
    struct Item: Decodable, Equatable {
        var x: Int
        var path: String

        enum CodingKeys: CodingKey { case x }

        init(from decoder: any Decoder) throws {
            x = try decoder.container(keyedBy: CodingKeys.self).decode(Int.self, forKey: .x)
            path = decoder.codingPath.map(\.stringValue).joined(separator: "/")
        }
    }
}

private class Base: Decodable {
    var base: Int
}

private final class Derived: Base {
    var own: Int

    enum CodingKeys: CodingKey { case own }

    required init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        own = try container.decode(Int.self, forKey: .own)
        try super.init(from: container.superDecoder())
    }
}
