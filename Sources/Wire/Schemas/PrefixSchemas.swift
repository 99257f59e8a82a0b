import Foundation

/// The schemas in force, by prefix (the entries of ``SchemaKeys``): which one governs a key, and
/// whether a write keeps to them.
///
/// The engine keeps one with the published entries, changed as `$schemas/` entries are, and the
/// writer a copy while it plans a group, changed as the group's schema writes are planned. With
/// no schema, a write's check is one test of an empty array.
package struct PrefixSchemas: Sendable {
    /// By prefix, the longest first: the first that selects a key governs it.
    private var schemas: [(prefix: String, schema: ValueSchema)] = []

    package init() {}

    /// Whether no prefix has a schema.
    package var isEmpty: Bool { schemas.isEmpty }

    /// The schema that governs `key`, from the longest prefix with one that selects it.
    package func governing(_ key: String) -> (prefix: String, schema: ValueSchema)? {
        for governing in schemas where KeyRules.key(key, hasPrefix: governing.prefix) { return governing }
        return nil
    }

    /// Sets the schema of `prefix` (nil: removes it).
    package mutating func set(_ prefix: String, to schema: ValueSchema?) {
        schemas.removeAll { $0.prefix == prefix }
        guard let schema else { return }
        let index = schemas.firstIndex { $0.prefix.utf8.count < prefix.utf8.count } ?? schemas.endIndex
        schemas.insert((prefix, schema), at: index)
    }

    /// Follows a change of `key`, whatever it is, to `value` (nil: deleted): a schema's key sets or
    /// removes that schema; any other key changes nothing. A document that is not a schema (never
    /// written by syncd, which checks them) governs nothing.
    package mutating func follow(_ key: String, value: Data?) {
        guard SchemaKeys.isReserved(key), let prefix = SchemaKeys.prefix(ofKey: key) else { return }
        set(prefix, to: value.flatMap { try? Self.schema(prefix: prefix, document: $0) })
    }

    /// The schema `document` describes, as the schema of `prefix`.
    ///
    /// - Throws: ``SharedStateError`` `invalidArgument` naming the keyword at fault and where.
    package static func schema(prefix: String, document: Data) throws(SharedStateError) -> ValueSchema {
        let parsed: JSONValue
        do {
            parsed = try JSONValue(parsing: document)
        } catch {
            throw SharedStateError(.invalidArgument, "the schema of prefix \(KeyRules.quoted(prefix)) is not JSON")
        }
        do {
            return try ValueSchema(document: parsed)
        } catch {
            throw SharedStateError(.invalidArgument, "the schema of prefix \(KeyRules.quoted(prefix)) cannot be used: \(error)")
        }
    }
}
