import Foundation

/// What a write must keep to: every value it writes satisfies the schema governing its key, and a
/// schema it sets or removes leaves every value it then governs satisfying it. A write that does
/// not is refused whole with a `schemaViolation` naming where and how.
package extension PrefixSchemas {
    /// How many violations a refused schema names at most.
    static let maxViolationsNamed = 20

    /// Checks the values `request` writes (a transaction's in both branches: a transaction that
    /// breaks a schema fails whatever the state) and, for a write of a schema's key, the values
    /// already written that the schema would then govern, read by `values(prefix)`.
    ///
    /// - Returns: The schemas as they stand once `request` is made.
    /// - Throws: ``SharedStateError`` `schemaViolation`, or `invalidArgument` for a document that
    ///   is not a schema.
    func check(
        _ request: WriteRequest, values: (_ prefix: String) -> [(key: String, value: Data)]
    ) throws(SharedStateError) -> PrefixSchemas {
        switch request {
        case .put(let key, let value, _, _):
            if SchemaKeys.isReserved(key) { return try checkSetting(key, to: value, values: values) }
            try check(key, value)
        case .delete(let key, _):
            if SchemaKeys.isReserved(key) { return try checkSetting(key, to: nil, values: values) }
        case .transaction(_, let onSuccess, let onFailure):
            guard !isEmpty else { break }
            for case .put(let key, let value, _, _) in onSuccess { try check(key, value) }
            for case .put(let key, let value, _, _) in onFailure { try check(key, value) }
        case .expireEphemeral, .restore:
            break
        }
        return self
    }

    /// Refuses the writes of a schema's key that no state allows: an ephemeral one, one inside a
    /// transaction, and a document that is not a schema. Cheap for any other write: one byte
    /// looked at per key.
    static func checkSchemaWrites(in request: WriteRequest) throws(SharedStateError) {
        switch request {
        case .put(let key, let value, _, let ephemeralSession):
            guard let prefix = SchemaKeys.prefix(ofKey: key) else { return }
            if ephemeralSession != 0 {
                throw SharedStateError(.invalidArgument, "the schema of prefix \(KeyRules.quoted(prefix)) cannot be ephemeral")
            }
            _ = try schema(prefix: prefix, document: value)
        case .transaction(_, let onSuccess, let onFailure):
            for operation in onSuccess + onFailure {
                guard let prefix = SchemaKeys.prefix(ofKey: operation.key) else { continue }
                throw SharedStateError(
                    .invalidArgument,
                    "a transaction cannot write the schema of prefix \(KeyRules.quoted(prefix)): set or delete a schema on its own")
            }
        case .delete, .expireEphemeral, .restore:
            return
        }
    }

    /// Checks `value`, to be written at `key`, against the schema governing `key`.
    func check(_ key: String, _ value: Data) throws(SharedStateError) {
        guard let governing = governing(key), let violation = Self.firstViolation(of: value, governing.schema) else { return }
        let said = violation.said(of: key, under: governing.prefix)
        throw SharedStateError(said.description, violations: [said])
    }

    /// The first rule of `schema` that `value` breaks.
    static func firstViolation(of value: Data, _ schema: ValueSchema) -> SchemaViolation? {
        if schema.accepts(json: value) { return nil }
        // syncd took only JSON: parsing it again cannot fail.
        guard let parsed = try? JSONValue(parsing: value) else {
            return SchemaViolation(pointer: "", rule: "type", limit: "", found: nil, reason: "not JSON")
        }
        return schema.firstViolation(of: parsed)
    }

    /// Checks setting the schema whose key is `key` to `document` (nil: removing it) against the
    /// values under its prefix that it would then govern, or, removed, that a shorter prefix's
    /// schema would.
    private func checkSetting(
        _ key: String, to document: Data?, values: (_ prefix: String) -> [(key: String, value: Data)]
    ) throws(SharedStateError) -> PrefixSchemas {
        guard let prefix = SchemaKeys.prefix(ofKey: key) else { return self }
        var after = self
        after.set(prefix, to: try document.map { document throws(SharedStateError) in try Self.schema(prefix: prefix, document: document) })
        // Removed with no shorter prefix's schema taking over: nothing can break.
        if document == nil && after.governing(prefix) == nil { return after }
        var violations: [SchemaViolation] = []
        var broken = 0
        for (key, value) in values(prefix) {
            // A longer prefix's schema governs its keys whatever this one says.
            guard let governing = after.governing(key), governing.prefix.utf8.count <= prefix.utf8.count else { continue }
            guard let violation = Self.firstViolation(of: value, governing.schema) else { continue }
            broken += 1
            if violations.count < Self.maxViolationsNamed { violations.append(violation.said(of: key, under: governing.prefix)) }
        }
        guard let first = violations.first else { return after }
        let what = document == nil ? "removing the schema of prefix" : "the schema of prefix"
        let count = broken == 1 ? "1 value" : "\(broken) values"
        let governed = document == nil ? "the schema that would govern them instead" : "it"
        throw SharedStateError(
            "\(what) \(KeyRules.quoted(prefix)) is refused: \(count) already written under it break\(broken == 1 ? "s" : "") \(governed); the first: \(first)",
            violations: violations)
    }
}
