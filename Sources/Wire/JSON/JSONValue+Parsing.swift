import Foundation

extension JSONValue {
    /// Parses one JSON document in one validating pass (``JSONTokens``): what syncd checks a value
    /// against its schema with, so about as fast as the value check every write already takes.
    ///
    /// A number that overflows a `Double` stays `.number(±infinity)` rather than being refused;
    /// a document the token pass leaves to `JSONDecoder` (a key twice in one object, nesting
    /// deeper than 512) is parsed by it.
    ///
    /// - Throws: `DecodingError` when `data` is not JSON.
    public init(parsing data: Data) throws {
        guard let tokens = JSONTokens(data) else {
            self = try JSONValue(json: data)
            return
        }
        var index = 0
        self = tokens.bytes.withUnsafeBufferPointer { bytes in Self.value(at: &index, in: tokens.tokens, bytes: bytes) }
    }

    /// The value whose first token is at `index`, which is left at the token after it.
    static func value(at index: inout Int, in tokens: [JSONTokens.Token], bytes: UnsafeBufferPointer<UInt8>) -> JSONValue {
        let token = tokens[index]
        index += 1
        switch token.kind {
        case .null: return .null
        case .true: return .bool(true)
        case .false: return .bool(false)
        case .string: return .string(text(of: token, in: bytes))
        case .number: return .number(number(UnsafeBufferPointer(rebasing: bytes[Int(token.start)..<Int(token.end)])))
        case .array:
            var elements: [JSONValue] = []
            elements.reserveCapacity(Int(token.count))
            for _ in 0..<token.count { elements.append(value(at: &index, in: tokens, bytes: bytes)) }
            return .array(elements)
        case .object:
            var members: [String: JSONValue] = [:]
            members.reserveCapacity(Int(token.count))
            for _ in 0..<token.count {
                let name = text(of: tokens[index], in: bytes)
                index += 1
                members[name] = value(at: &index, in: tokens, bytes: bytes)
            }
            return .object(members)
        }
    }

    /// A number's text as a `Double`, correctly rounded (±infinity beyond its range).
    static func number(_ text: UnsafeBufferPointer<UInt8>) -> Double {
        Double(String(decoding: text, as: UTF8.self)) ?? .nan
    }

    private static func text(of token: JSONTokens.Token, in bytes: UnsafeBufferPointer<UInt8>) -> String {
        let text = UnsafeBufferPointer(rebasing: bytes[Int(token.start)..<Int(token.end)])
        // The token pass refused a key whose escapes do not resolve; a value's fall back to U+FFFD.
        return token.hasEscapes
            ? JSONTokens.unescaped(text) ?? String(decoding: text, as: UTF8.self) : String(decoding: text, as: UTF8.self)
    }
}
