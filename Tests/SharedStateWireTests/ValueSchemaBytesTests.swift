import Foundation
import SharedStateWire
import Testing

/// `accepts(json:)`, the check of a value in its bytes that every write under a schema takes,
/// says what `firstViolation(of:)` says of the value built, on schemas and values made from the
/// vocabulary at random (a fixed seed, so a failure names a case that comes back).
@Suite struct ValueSchemaBytesTests {
    /// A small generator with a seed: SplitMix64.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let names = ["a", "b", "on", "mode", "x/y", "é"]
    static let texts = ["", "a", "heat", "ééé", "off", "a\\\"b", "\\u00e9"]

    static func value(_ depth: Int, _ random: inout Generator) -> String {
        switch Int.random(in: 0..<(depth > 2 ? 5 : 8), using: &random) {
        case 0: return "null"
        case 1: return Bool.random(using: &random) ? "true" : "false"
        case 2:
            return ["0", "1", "1.0", "-0", "2.5", "30", "31", "-7", "1e2", "0.30000000000000004", "12345678901234567890"]
                .randomElement(using: &random)!
        case 3, 4: return "\"" + texts.randomElement(using: &random)! + "\""
        case 5, 6:
            let count = Int.random(in: 0...3, using: &random)
            let members = names.shuffled(using: &random).prefix(count).map { "\"\($0)\":" + value(depth + 1, &random) }
            return "{" + members.joined(separator: ",") + "}"
        default:
            return "[" + (0..<Int.random(in: 0...3, using: &random)).map { _ in value(depth + 1, &random) }.joined(separator: ",") + "]"
        }
    }

    static func schema(_ depth: Int, _ random: inout Generator) -> String {
        if Int.random(in: 0..<12, using: &random) == 0 { return Bool.random(using: &random) ? "true" : "false" }
        var keywords: [String] = []
        let types = ["null", "boolean", "object", "array", "number", "string", "integer"]
        for _ in 0..<Int.random(in: 0...3, using: &random) {
            switch Int.random(in: 0..<(depth > 1 ? 14 : 18), using: &random) {
            case 0: keywords.append(#""type":"\#(types.randomElement(using: &random)!)""#)
            case 1: keywords.append(#""type":["\#(types.randomElement(using: &random)!)","\#(types.randomElement(using: &random)!)"]"#)
            case 2: keywords.append(#""minimum":\#(Int.random(in: -1...3, using: &random))"#)
            case 3: keywords.append(#""maximum":\#(["0", "1", "30", "2.5"].randomElement(using: &random)!)"#)
            case 4: keywords.append(#""exclusiveMaximum":\#(Int.random(in: 0...31, using: &random))"#)
            case 5: keywords.append(#""multipleOf":\#(["0.1", "2", "0.5", "1"].randomElement(using: &random)!)"#)
            case 6: keywords.append(#""minLength":\#(Int.random(in: 0...3, using: &random))"#)
            case 7: keywords.append(#""maxLength":\#(Int.random(in: 0...3, using: &random))"#)
            case 8: keywords.append(#""enum":["heat","off",1,null]"#)
            case 9: keywords.append(#""pattern":"^[a-z]*$""#)
            case 10: keywords.append(#""minProperties":\#(Int.random(in: 0...2, using: &random))"#)
            case 11: keywords.append(#""required":["\#(names.randomElement(using: &random)!)"]"#)
            case 12: keywords.append(#""maxItems":\#(Int.random(in: 0...2, using: &random))"#)
            case 13: keywords.append(#""uniqueItems":true"#)
            case 14:
                let properties = names.shuffled(using: &random).prefix(2).map { "\"\($0)\":" + schema(depth + 1, &random) }
                keywords.append(#""properties":{"# + properties.joined(separator: ",") + "}")
            case 15: keywords.append(#""additionalProperties":"# + schema(depth + 1, &random))
            case 16: keywords.append(#""items":"# + schema(depth + 1, &random))
            default: keywords.append(#""prefixItems":["# + schema(depth + 1, &random) + "]")
            }
        }
        // A keyword twice in one object is not a schema this test means to make.
        var seen = Set<String>()
        keywords = keywords.filter { seen.insert(String($0.prefix { $0 != ":" })).inserted }
        return "{" + keywords.joined(separator: ",") + "}"
    }

    @Test func theBytesCheckAgreesWithTheBuiltValueOnGeneratedPairs() throws {
        var random = Generator(state: 57)
        var agreed = 0
        var refused = 0
        for _ in 0..<3_000 {
            let schemaText = Self.schema(0, &random)
            // A minimum above its maximum is refused as a schema: make another.
            guard let schema = try? ValueSchema(document: JSONValue(json: Data(schemaText.utf8))) else { continue }
            for _ in 0..<10 {
                let valueText = Self.value(0, &random)
                let value = Data(valueText.utf8)
                let built = schema.firstViolation(of: try JSONValue(parsing: value)) == nil
                #expect(schema.accepts(json: value) == built, "\(schemaText) on \(valueText)")
                if schema.accepts(json: value) == built { agreed += 1 }
                if !built { refused += 1 }
            }
        }
        #expect(agreed > 27_000, "\(agreed) pairs agreed")
        // Both verdicts occur often enough to mean something.
        #expect(refused > agreed / 6 && refused < agreed * 5 / 6, "\(refused) of \(agreed) refused")
    }
}
