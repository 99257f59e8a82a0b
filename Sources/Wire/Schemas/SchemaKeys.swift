/// Where schemas live in the key space: the schema of prefix `climate/` is the entry of key
/// `$schemas/climate/`, its value the schema document.
///
/// Schemas are state like any other: durable, numbered by revision, watchable (watch
/// `$schemas/`), in backups and restores, replicated by etcd, and governed by the access policy
/// (writing `$schemas/climate/` is setting the schema of `climate/`). Keys starting with `$` are
/// syncd's: `$schemas/` followed by a prefix is the only such key today.
public enum SchemaKeys {
    /// The prefix of every schema's key.
    public static let keyPrefix = "$schemas/"

    /// The key holding the schema of `prefix`.
    public static func key(forPrefix prefix: String) -> String { keyPrefix + prefix }

    /// The prefix whose schema `key` holds; nil when `key` is not a schema's key.
    public static func prefix(ofKey key: String) -> String? {
        guard isSchemaKey(key) else { return nil }
        return String(key.utf8.dropFirst(keyPrefix.utf8.count))!
    }

    /// Whether `key` is a schema's key.
    public static func isSchemaKey(_ key: String) -> Bool {
        key.utf8.first == reservedByte && KeyRules.key(key, hasPrefix: keyPrefix)
    }

    /// Whether `key` lies in syncd's part of the key space (it starts with `$`); a cheap byte test
    /// for the paths every write takes.
    @inlinable
    public static func isReserved(_ key: String) -> Bool { key.utf8.first == reservedByte }

    @usableFromInline static let reservedByte = UInt8(ascii: "$")

    /// Checks that `prefix` can have a schema: a valid prefix, not empty, outside syncd's keys.
    ///
    /// - Throws: ``SharedStateError`` `invalidArgument` naming the problem.
    public static func validatePrefix(_ prefix: String, limits: Limits = .default) throws(SharedStateError) {
        if prefix.isEmpty {
            throw SharedStateError(.invalidArgument, "a schema governs a prefix: the empty prefix cannot have one")
        }
        try KeyRules.validatePrefix(prefix, limits: limits)
        if isReserved(prefix) {
            throw SharedStateError(.invalidArgument, "invalid prefix \(KeyRules.quoted(prefix)): keys starting with '$' are syncd's")
        }
        let keyBytes = keyPrefix.utf8.count + prefix.utf8.count
        if keyBytes > limits.maxKeyBytes {
            throw SharedStateError(
                .tooLarge,
                "invalid prefix \(KeyRules.quoted(prefix)): its schema's key would be \(keyBytes) bytes, longer than the limit of \(limits.maxKeyBytes)"
            )
        }
    }
}
