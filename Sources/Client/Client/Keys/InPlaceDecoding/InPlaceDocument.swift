import Foundation
import SharedStateWire

/// What one in-place decoding reads: the tokens, and whether any part of it declined.
final class InPlaceDocument {
    let tokens: JSONTokens
    /// Set by ``declined()``: the value, even if one was built, is not to be trusted.
    private(set) var isDeclined = false
    /// The object and member of the last key found: the next lookup starts after it, since a
    /// `Decodable` mostly asks for keys in the order they were written.
    private var lastFound: (object: Int, member: Int) = (-1, -1)

    init(_ tokens: JSONTokens) {
        self.tokens = tokens
    }

    /// Marks the decoding declined and returns the error that unwinds it.
    func declined() -> Declined {
        isDeclined = true
        return Declined()
    }

    /// Unwinds a decoding that declined; never seen outside ``InPlaceJSONDecoder``.
    struct Declined: Error {}

    func kind(at index: Int) -> JSONTokens.Kind { tokens.tokens[index].kind }

    /// The value token of the member named `name` in the object at `object`.
    func member(named name: String, in object: Int) -> Int? {
        let count = Int(tokens.tokens[object].count)
        guard count > 0 else { return nil }
        var key = lastFound.object == object ? lastFound.member : object + 1
        for _ in 0..<count {
            let value = key + 1
            if tokens.isKey(at: key, named: name) {
                let next = Int(tokens.tokens[value].next)
                lastFound = (object, next < Int(tokens.tokens[object].next) ? next : object + 1)
                return value
            }
            key = Int(tokens.tokens[value].next)
            if key >= Int(tokens.tokens[object].next) { key = object + 1 }
        }
        return nil
    }

    /// The keys of the object at `object`, in document order.
    func memberNames(in object: Int) -> [String] {
        var names: [String] = []
        names.reserveCapacity(Int(tokens.tokens[object].count))
        var key = object + 1
        for _ in 0..<tokens.tokens[object].count {
            names.append(tokens.string(at: key)!)
            key = Int(tokens.tokens[key + 1].next)
        }
        return names
    }

    func bool(at index: Int) throws(Declined) -> Bool { try required(tokens.bool(at: index)) }
    func string(at index: Int) throws(Declined) -> String { try required(tokens.string(at: index)) }
    func double(at index: Int) throws(Declined) -> Double { try required(tokens.double(at: index)) }
    func float(at index: Int) throws(Declined) -> Float { try required(tokens.float(at: index)) }
    func integer<Integer: FixedWidthInteger>(at index: Int) throws(Declined) -> Integer {
        try required(tokens.integer(at: index, as: Integer.self))
    }

    /// `value`, or a decline when the token could not give it as JSONDecoder would.
    private func required<Value>(_ value: Value?) throws(Declined) -> Value {
        guard let value else { throw declined() }
        return value
    }

    /// A nested value, decoded by its own `init(from:)`.
    func value<Value: Decodable>(_ type: Value.Type, at index: Int, path: InPlaceCodingPath) throws -> Value {
        // JSONDecoder reads these its own way (its date and data strategies, URL from a string).
        if Value.self == Date.self || Value.self == Data.self || Value.self == URL.self || Value.self == Decimal.self {
            throw declined()
        }
        return try Value(from: InPlaceDecoder(document: self, token: index, path: path))
    }
}
