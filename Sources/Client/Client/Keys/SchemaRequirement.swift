import Foundation

/// The schema a feature was written against: the JSON Schema it expects syncd to hold for a key
/// prefix, so that a value it cannot decode is refused at syncd instead of reaching its reducer.
///
/// ```swift
/// extension SchemaRequirement {
///     static let fans = SchemaRequirement(prefix: "fan/", json: #"""
///         {"type": "object", "required": ["on", "speed"],
///          "properties": {"on": {"type": "boolean"}, "speed": {"type": "integer", "minimum": 0}}}
///         """#)
/// }
/// extension SharedKey where Value == Fan {
///     static let hall = SharedKey("fan/hall", default: Fan(), schema: .fans)
/// }
/// FeatureHost(name: "fans", requiring: [.fans]).main(...)  // one clear message at launch
/// ```
public struct SchemaRequirement: Sendable, Hashable {
    /// The prefix whose schema it is.
    public var prefix: String
    /// The JSON Schema document.
    public var document: Data

    /// A requirement for `prefix`'s schema to be `document`.
    public init(prefix: String, document: Data) {
        self.prefix = prefix
        self.document = document
    }

    /// A requirement for `prefix`'s schema to be the JSON document in `json`.
    public init(prefix: String, json: String) {
        self.init(prefix: prefix, document: Data(json.utf8))
    }
}

extension SharedStateBackend {
    /// Checks that syncd holds `requirement`'s schema for its prefix: the same document, compared
    /// as JSON values (member order and spacing aside).
    ///
    /// - Throws: `notFound` when the prefix has no schema, `conflict` when it has another, each
    ///   saying what to do; `invalidArgument` when `requirement`'s document is not JSON.
    public nonisolated(nonsending) func requireSchema(_ requirement: SchemaRequirement) async throws(SharedStateError) {
        let prefix = KeyRules.quoted(requirement.prefix)
        guard let expected = try? JSONValue(parsing: requirement.document) else {
            throw SharedStateError(.invalidArgument, "the schema this process requires for \(prefix) is not JSON")
        }
        guard let held = try await schema(for: requirement.prefix) else {
            throw SharedStateError(
                .notFound,
                "syncd holds no schema for \(prefix), and this process requires one: set it with `syncctl schema set \(requirement.prefix) FILE`"
            )
        }
        guard (try? JSONValue(parsing: held.document)) == expected else {
            throw SharedStateError(
                .conflict,
                "syncd's schema for \(prefix) (version \(held.version)) is not the one this process requires: syncd holds "
                    + "\(Self.shortened(held.document)), this process requires \(Self.shortened(requirement.document))"
            )
        }
    }

    /// A document on one line, cut at 200 characters.
    private static func shortened(_ document: Data) -> String {
        let text = (try? JSONValue(parsing: document))?.jsonText ?? String(decoding: document, as: UTF8.self)
        return text.count > 200 ? text.prefix(200) + "…" : text
    }
}
