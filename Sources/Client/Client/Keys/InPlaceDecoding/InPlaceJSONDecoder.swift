import Foundation
import SharedStateWire

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
/// way; a number with a fraction or exponent read as an integer; a number that overflows, or
/// underflows to zero; a key that is missing or of another type; a key twice in one object;
/// invalid UTF-8; nesting deeper than 512) makes it decline, even when the type caught the error
/// and carried on. A `Decodable`'s `init(from:)` may then run twice for one value.
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
