import Foundation
import SharedStateWire
import TestSupport
import Testing

/// The package's one JSON grammar (`JSONScanner`) against Foundation's parser, and its two uses
/// against each other: random documents, and each of them mutated a byte at a time, are accepted
/// by syncd's check (`JSONValidator`) exactly when `JSONSerialization` accepts them, and split
/// into tokens for the client's decoder (`JSONTokens`) exactly when the check accepts them, but
/// for the rules the tokens add (a key twice in one object).
///
/// Outside the comparison, by design: a number too large for a `Double` (Foundation refuses it;
/// syncd stores the bytes it was sent, and JSON does not limit numbers); a comma before a closing
/// bracket (Foundation on Linux accepts it; RFC 8259 does not, and neither does syncd); and
/// escaped UTF-16 surrogates (the mutations cannot make one: no `d` or `D` among their bytes),
/// whose halves JSON leaves to the reader.
@Suite struct JSONGrammarTests {
    @Test(arguments: 0..<6) func acceptsExactlyWhatFoundationAccepts(seed: Int) {
        var random = SeededGenerator(seed: UInt64(seed) &* 7919 &+ 17)
        var disagreements: [String] = []
        var accepted = 0
        var compared = 0
        for _ in 0..<1500 {
            let document = Array(Self.document(depth: 0, random: &random).utf8)
            for mutated in [document] + (0..<6).map({ _ in Self.mutate(document, times: 1 + Int(random.next() % 3), random: &random) }) {
                guard !Self.hasNumberBeyondDouble(mutated) else { continue }
                compared += 1
                let ours = (try? JSONValidator.validate(mutated, maxDepth: 512)) != nil
                let foundation = (try? JSONSerialization.jsonObject(with: Data(mutated), options: .fragmentsAllowed)) != nil
                if ours { accepted += 1 }
                if ours != foundation && !(foundation && Self.hasTrailingComma(mutated)) {
                    disagreements.append(
                        "\(ours ? "accepted" : "refused") but Foundation \(foundation ? "accepts" : "refuses"): \(Self.show(mutated))")
                }
                let tokens = JSONTokens(Data(mutated)) != nil
                if tokens != ours && !(ours && Self.hasRepeatedKey(mutated)) {
                    disagreements.append(
                        "tokens \(tokens ? "made" : "refused") where the check \(ours ? "accepts" : "refuses"): \(Self.show(mutated))")
                }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(10))")
        // Both sides of the comparison are exercised.
        #expect(accepted > compared / 5 && accepted < compared * 4 / 5, "\(accepted) of \(compared) accepted")
    }

    /// A random well-formed document of at most a few levels.
    private static func document(depth: Int, random: inout SeededGenerator) -> String {
        let choice = depth >= 4 ? random.next() % 4 : random.next() % 7
        switch choice {
        case 0: return ["0", "-0", "12", "-3.25", "1e5", "2.5E-3", "100", "7e+2"][Int(random.next() % 8)]
        case 1: return ["true", "false", "null"][Int(random.next() % 3)]
        case 2, 3:
            let pieces = [#"a"#, #"hé"#, #"✓"#, #"😀"#, #"\n"#, #"\""#, #"\\"#, #"\/"#, #"\u00e9"#, #"\u2713"#, #"x y"#, #"\t"#]
            return "\"" + (0..<Int(random.next() % 4)).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined() + "\""
        case 4, 5:
            let members = (0..<Int(random.next() % 4)).map { index in
                "\"k\(index)\"" + [":", " : "][Int(random.next() % 2)] + document(depth: depth + 1, random: &random)
            }
            return "{" + members.joined(separator: [",", ", "][Int(random.next() % 2)]) + "}"
        default:
            let elements = (0..<Int(random.next() % 4)).map { _ in document(depth: depth + 1, random: &random) }
            return "[" + elements.joined(separator: [",", " ,\n"][Int(random.next() % 2)]) + "]"
        }
    }

    /// Bytes a mutation puts in: JSON's structure, its literals' letters, digits, whitespace, a
    /// control character, and the bytes of UTF-8 sequences whole, cut and invalid.
    private static let alphabet =
        Array(#"{}[],:"\ -+.eE0123456789tfnulrsa"#.utf8) + [0x0A, 0x09, 0x01, 0xC3, 0xA9, 0xE2, 0x9C, 0x93, 0xFF, 0x80]

    private static func mutate(_ document: [UInt8], times: Int, random: inout SeededGenerator) -> [UInt8] {
        var bytes = document
        for _ in 0..<times {
            let position = bytes.isEmpty ? 0 : Int(random.next() % UInt64(bytes.count + 1))
            let byte = alphabet[Int(random.next() % UInt64(alphabet.count))]
            switch random.next() % 3 {
            case 0: bytes.insert(byte, at: position)
            case 1 where position < bytes.count: bytes.remove(at: position)
            default: if position < bytes.count { bytes[position] = byte } else { bytes.append(byte) }
            }
        }
        return bytes
    }

    /// Whether a run of digits could be a number a `Double` does not hold (an exponent of three
    /// digits or more, or more than fifteen digits).
    private static func hasNumberBeyondDouble(_ bytes: [UInt8]) -> Bool {
        var digits = 0
        var afterExponent = false
        for byte in bytes {
            if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                digits += 1
                if digits > 15 || (afterExponent && digits > 2) { return true }
            } else if byte | 0x20 == UInt8(ascii: "e") {
                afterExponent = true
                digits = 0
            } else if byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") {
                continue
            } else {
                afterExponent = false
                if byte != UInt8(ascii: ".") { digits = 0 }
            }
        }
        return false
    }

    /// Whether some object of an accepted document has a key twice: Foundation keeps one of
    /// them, so its objects hold fewer keys than the document has members.
    private static func hasRepeatedKey(_ bytes: [UInt8]) -> Bool {
        guard let value = try? JSONSerialization.jsonObject(with: Data(bytes), options: .fragmentsAllowed) else { return false }
        func keys(_ value: Any) -> Int {
            if let array = value as? [Any] { return array.reduce(0) { $0 + keys($1) } }
            guard let object = value as? [String: Any] else { return 0 }
            return object.count + object.values.reduce(0) { $0 + keys($1) }
        }
        return keys(value) < memberCount(bytes)
    }

    /// Whether a comma outside strings is followed by a closing bracket (whitespace between).
    private static func hasTrailingComma(_ bytes: [UInt8]) -> Bool {
        let structure = outsideStrings(bytes).filter { ![0x20, 0x0A, 0x0D, 0x09].contains($0) }
        return zip(structure, structure.dropFirst()).contains {
            $0 == UInt8(ascii: ",") && ($1 == UInt8(ascii: "]") || $1 == UInt8(ascii: "}"))
        }
    }

    /// The colons outside strings: one per member.
    private static func memberCount(_ bytes: [UInt8]) -> Int {
        outsideStrings(bytes).filter { $0 == UInt8(ascii: ":") }.count
    }

    /// The bytes outside strings, each string (its escapes followed) left as one quote.
    private static func outsideStrings(_ bytes: [UInt8]) -> [UInt8] {
        var outside: [UInt8] = []
        var inString = false
        var escaped = false
        for byte in bytes {
            if !inString {
                outside.append(byte)
                inString = byte == UInt8(ascii: "\"")
            } else if escaped {
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                inString = false
            }
        }
        return outside
    }

    private static func show(_ bytes: [UInt8]) -> String {
        String(decoding: bytes, as: UTF8.self).debugDescription + " \(bytes.filter { $0 >= 0x80 || $0 < 0x20 })"
    }
}
