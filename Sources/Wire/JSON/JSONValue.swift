import Foundation

/// A JSON document as a value: what ``JSONDiff`` compares.
public enum JSONValue: Sendable, Hashable, Decodable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Decodes one JSON document.
    ///
    /// - Throws: `DecodingError` when `data` is not JSON.
    public init(json data: Data) throws {
        self = try JSONDecoder().decode(JSONValue.self, from: data)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([JSONValue].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// The value as compact JSON text, object keys sorted.
    public var jsonText: String {
        switch self {
        case .null: return "null"
        case .bool(let bool): return bool ? "true" : "false"
        case .number(let number):
            // Whole numbers that a double holds exactly (to 2^53) as integers, as they were written.
            if number.rounded() == number, abs(number) <= 9_007_199_254_740_992 { return String(Int64(number)) }
            return "\(number)"
        case .string(let string): return KeyRules.quoted(string)
        case .array(let elements): return "[" + elements.map(\.jsonText).joined(separator: ",") + "]"
        case .object(let members):
            return "{" + members.keys.sorted().map { KeyRules.quoted($0) + ":" + members[$0]!.jsonText }.joined(separator: ",") + "}"
        }
    }
}
