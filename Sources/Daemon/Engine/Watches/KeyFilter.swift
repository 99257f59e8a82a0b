import SharedStateWire

/// Which keys a client may see: the prefixes it may read under, as a value the engine holds.
/// Watches, lists and snapshots leave out every other key, values and names alike; nil where a
/// filter is optional lets every key through.
package struct KeyFilter: Sendable, Hashable {
    /// The prefixes of the keys it lets through.
    package let readablePrefixes: [String]

    package init(readablePrefixes: [String]) {
        self.readablePrefixes = readablePrefixes
    }

    /// Whether `key` may be seen.
    package func callAsFunction(_ key: String) -> Bool {
        readablePrefixes.contains { KeyRules.key(key, hasPrefix: $0) }
    }

    /// Whether some key under `prefix` may be seen: a readable prefix covers it, or lies under it.
    package func allowsSome(under prefix: String) -> Bool {
        readablePrefixes.contains { KeyRules.key(prefix, hasPrefix: $0) || KeyRules.key($0, hasPrefix: prefix) }
    }
}
