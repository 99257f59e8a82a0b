import Foundation

/// A key whose value is a `Codable` type, with the value to use while the key does not exist.
///
/// ```swift
/// extension SharedKey where Value == Int {
///     static let counter = SharedKey("counter/value", default: 0)
/// }
/// try await client.set(.counter, to: 1)
/// for await count in client.values(of: .counter) { print(count) }
/// ```
///
/// Values travel as JSON (Foundation's `JSONEncoder`, keys sorted), so any process, in any
/// language, can read them. They are read back as `JSONDecoder` reads them, by a decoder that
/// finds the members where they lie in the JSON and leaves to `JSONDecoder` what it does not
/// handle the same way.
public struct SharedKey<Value: Codable & Sendable>: Sendable {
    /// The key's name, such as `counter/value`.
    public let name: String
    /// The value while the key does not exist (never written, or deleted).
    public let defaultValue: Value
    /// The schema `Value` satisfies, which the feature expects syncd to hold for the key's prefix;
    /// ``SharedStateBackend/requireSchema(_:)`` (or `FeatureHost`'s `requiring:`) checks it.
    public let schema: SchemaRequirement?

    /// Creates a typed key; `schema` names the schema its values satisfy.
    public init(_ name: String, default defaultValue: Value, schema: SchemaRequirement? = nil) {
        self.name = name
        self.defaultValue = defaultValue
        self.schema = schema
    }

    /// The JSON document for `value`.
    ///
    /// - Throws: `SharedStateError` `invalidArgument` when the value cannot be encoded.
    public func encode(_ value: Value) throws(SharedStateError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return try encoder.encode(value)
        } catch {
            throw SharedStateError(.invalidArgument, "cannot encode a value for key \"\(name)\" as JSON: \(error)")
        }
    }

    /// The value a JSON document holds.
    ///
    /// - Throws: `SharedStateError` `invalidArgument` when the stored JSON is not a `Value` (for
    ///   example after the type changed shape), naming where inside the value and why
    ///   (`the value of key "fan/hall" is not a Fan: /on: expected Bool, found a string`). The
    ///   failure is logged at warning too (label `sharedstate.decoding`), since the writer is not
    ///   told.
    public func decode(_ data: Data) throws(SharedStateError) -> Value {
        try Self.decode(data, named: name)
    }

    /// The value a JSON document stored under the key `name` holds, for keys found under a
    /// prefix.
    ///
    /// - Throws: `SharedStateError` `invalidArgument` when the JSON is not a `Value`.
    public static func decode(_ data: Data, named name: String) throws(SharedStateError) -> Value {
        if let value = InPlaceJSONDecoder.decode(Value.self, from: data) { return value }
        do {
            return try sharedJSONDecoder.decode(Value.self, from: data)
        } catch {
            let failure = SharedStateError(
                .invalidArgument,
                "the value of key \(KeyRules.quoted(name)) is not a \(Value.self): \(DecodeFailure.describe(error, in: data))"
            )
            DecodeFailure.logger.warning("\(failure.message)", metadata: ["key": "\(name)"])
            throw failure
        }
    }
}

/// One decoder for every typed key, for the values ``InPlaceJSONDecoder`` leaves to it: it is
/// never configured, and making one per value cost an allocation and its options' storage.
private let sharedJSONDecoder = JSONDecoder()
