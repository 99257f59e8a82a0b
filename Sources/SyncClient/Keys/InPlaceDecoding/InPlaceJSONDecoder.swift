import Foundation

/// Decodes a `Decodable` value straight from JSON bytes, as `JSONDecoder` with its default
/// options does, or declines and leaves the value to `JSONDecoder`.
///
/// A typed key's value reaches a feature on every change, and `JSONDecoder` (which builds a
/// dictionary per object and a coding path per value) was the largest part of a change's way from
/// the socket to the reducer (BENCHMARKS.md, step 28). This decoder reads the members a type asks
/// for where they lie in one pass's tokens.
///
/// It gives the value `JSONDecoder` would, or nothing: whatever it does not handle exactly as
/// `JSONDecoder` does (`Date`, `Data`, `URL` and `Decimal`, which `JSONDecoder` reads its own
/// way; a number with a fraction or exponent read as an integer; a key that is missing or of
/// another type; escaped object keys; a key twice in one object) makes it decline, even when
/// the type caught the error and carried on. A `Decodable`'s `init(from:)` may then run twice
/// for one value.
enum InPlaceJSONDecoder {
    /// The value `data` holds, or nil when the decoder declines (see the type's discussion);
    /// the caller then asks `JSONDecoder`, for the value or the error.
    static func decode<Value: Decodable>(_ type: Value.Type, from data: Data) -> Value? {
        guard let tokens = JSONTokens(data) else { return nil }
        let document = InPlaceDocument(tokens)
        let value = try? document.value(Value.self, at: 0, path: .root)
        return document.isDeclined ? nil : value
    }
}

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

    func bool(at index: Int) throws(Declined) -> Bool {
        guard let value = tokens.bool(at: index) else { throw declined() }
        return value
    }

    func string(at index: Int) throws(Declined) -> String {
        guard let value = tokens.string(at: index) else { throw declined() }
        return value
    }

    func integer<Integer: FixedWidthInteger>(at index: Int) throws(Declined) -> Integer {
        guard let value = tokens.integer(at: index, as: Integer.self) else { throw declined() }
        return value
    }

    func double(at index: Int) throws(Declined) -> Double {
        guard let value = tokens.double(at: index) else { throw declined() }
        return value
    }

    func float(at index: Int) throws(Declined) -> Float {
        guard let value = tokens.float(at: index) else { throw declined() }
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
