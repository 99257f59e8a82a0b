import Foundation

/// The schema syncd holds for a key prefix: a JSON Schema document every value written under the
/// prefix must satisfy (see `SchemaKeys`).
public struct PrefixSchema: Sendable, Hashable {
    /// The prefix it governs: every key that starts with it, unless a longer prefix has a schema.
    public var prefix: String
    /// The JSON Schema document, as it was set.
    public var document: Data
    /// Times it was set since it was (last) created.
    public var version: UInt64
    /// The revision that last set it.
    public var modRevision: UInt64

    /// Creates a schema as syncd holds it.
    public init(prefix: String, document: Data, version: UInt64, modRevision: UInt64) {
        self.prefix = prefix
        self.document = document
        self.version = version
        self.modRevision = modRevision
    }

    /// The schema held in `entry`, the entry of a schema's key; nil for any other entry.
    public init?(_ entry: Entry) {
        guard let prefix = SchemaKeys.prefix(ofKey: entry.key) else { return nil }
        self.init(prefix: prefix, document: entry.value, version: entry.version, modRevision: entry.modRevision)
    }
}

/// Schemas: set, read, listed and removed as the entries of their keys (`$schemas/PREFIX`).
extension SharedStateBackend {
    /// The schema of `prefix`; nil when it has none.
    ///
    /// - Throws: `invalidArgument` for a prefix that cannot have a schema.
    public nonisolated(nonsending) func schema(for prefix: String) async throws(SharedStateError) -> PrefixSchema? {
        try SchemaKeys.validatePrefix(prefix)
        do {
            return PrefixSchema(try await get(SchemaKeys.key(forPrefix: prefix)))
        } catch  where error.code == .notFound {
            return nil
        }
    }

    /// Every schema, in byte order of their prefixes.
    public nonisolated(nonsending) func schemas() async throws(SharedStateError) -> [PrefixSchema] {
        try await list(prefix: SchemaKeys.keyPrefix).entries.compactMap(PrefixSchema.init)
    }

    /// The schema that governs `key`: that of the longest prefix of it with one; nil when none does.
    public nonisolated(nonsending) func schema(governing key: String) async throws(SharedStateError) -> PrefixSchema? {
        let all = try await schemas()
        guard let prefix = PrefixSchemas(all).governing(key)?.prefix else { return nil }
        return all.first { $0.prefix == prefix }
    }

    /// Sets the schema of `prefix` to `document`, a JSON Schema document in the vocabulary syncd
    /// checks (see docs/PROTOCOL.md, "Schemas").
    ///
    /// - Parameters:
    ///   - ifVersion: Set it only if the schema is at this version; 0 means only if the
    ///     prefix has none.
    ///   - prefix: The key prefix the schema governs (`climate/`).
    ///   - document: The schema, a JSON document.
    /// - Throws: `invalidArgument` naming the keyword at fault when `document` is not such a schema;
    ///   `schemaViolation` when values already written under `prefix` break it, with up to 20 of
    ///   them in `SharedStateError/violations`; `permissionDenied` when the access policy does
    ///   not let this process write `$schemas/PREFIX`.
    @discardableResult
    public nonisolated(nonsending) func setSchema(
        _ prefix: String, document: Data, ifVersion: UInt64? = nil
    ) async throws(SharedStateError) -> PutResult {
        try SchemaKeys.validatePrefix(prefix)
        return try await put(SchemaKeys.key(forPrefix: prefix), value: document, ifVersion: ifVersion, ephemeral: false)
    }

    /// Removes the schema of `prefix`, which no longer governs its keys; values are left as they
    /// are. Returns the revision of the removal.
    ///
    /// - Throws: `notFound` when it has none; `schemaViolation` when a shorter prefix's schema,
    ///   which would then govern the keys, is broken by values written under `prefix`.
    @discardableResult
    public nonisolated(nonsending) func deleteSchema(_ prefix: String) async throws(SharedStateError) -> UInt64 {
        try SchemaKeys.validatePrefix(prefix)
        do {
            return try await delete(SchemaKeys.key(forPrefix: prefix), ifVersion: nil)
        } catch  where error.code == .notFound {
            throw SharedStateError(.notFound, "the prefix \(KeyRules.quoted(prefix)) has no schema")
        }
    }

    /// What setting the schema of `prefix` to `document` would do, without setting it: throws what
    /// ``setSchema(_:document:ifVersion:)`` would throw now, checked here against the values this
    /// process may read.
    public nonisolated(nonsending) func checkSchema(_ prefix: String, document: Data) async throws(SharedStateError) {
        try SchemaKeys.validatePrefix(prefix)
        let current = PrefixSchemas(try await schemas())
        let values = try await list(prefix: prefix).entries.map { (key: $0.key, value: $0.value) }
        _ = try current.check(.put(key: SchemaKeys.key(forPrefix: prefix), value: document, ifVersion: nil)) { _ in values }
    }
}

extension PrefixSchemas {
    /// The schemas `schemas` hold, as syncd keeps them.
    init(_ schemas: [PrefixSchema]) {
        self.init()
        for schema in schemas { follow(SchemaKeys.key(forPrefix: schema.prefix), value: schema.document) }
    }
}
