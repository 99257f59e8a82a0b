/// The first rule of a schema that a value breaks: where inside the value, which rule, its limit,
/// and what the value holds there.
///
/// syncd refuses a write whose value breaks the schema governing its key with a
/// ``SharedStateError`` of code ``SharedStateError/Code/schemaViolation`` that carries one; a
/// schema that values already written would break is refused with up to 20 of them.
public struct SchemaViolation: Sendable, Hashable, CustomStringConvertible {
    /// The key whose value breaks the rule ("" until the violation is said of a key).
    public var key: String
    /// Where inside the value, as a JSON Pointer (RFC 6901; "" for the value itself).
    public var pointer: String
    /// The keyword whose rule it breaks (`maximum`, `required`, `type`, …; `false` for a `false`
    /// schema).
    public var rule: String
    /// The rule's limit as the schema gives it: `30` for a maximum, the missing member's name for
    /// `required`, the allowed types for `type`.
    public var limit: String
    /// What the value holds there; nil when it holds nothing (a missing member).
    public var found: JSONValue?
    /// What is wrong, said after what the value holds (`above the maximum 30`, `missing`).
    public var reason: String
    /// The prefix whose schema it breaks ("" until the violation is said of a key).
    public var prefix: String

    /// A violation as syncd reports it.
    public init(
        key: String = "", pointer: String, rule: String, limit: String, found: JSONValue?, reason: String, prefix: String = ""
    ) {
        self.key = key
        self.pointer = pointer
        self.rule = rule
        self.limit = limit
        self.found = found
        self.reason = reason
        self.prefix = prefix
    }

    /// For instance `climate/living: /target is 40, above the maximum 30`, or `fan/hall: /speed is
    /// missing`; without the key until one is set.
    public var description: String {
        let place = pointer.isEmpty ? "the value" : pointer
        let said: String
        if let found {
            let shown = found.jsonText.count > 40 ? ValueSchema.kind(of: found) : found.jsonText
            said = "\(place) is \(shown), \(reason)"
        } else {
            said = "\(place) is \(reason)"
        }
        return key.isEmpty ? said : "\(key): \(said)"
    }

    /// The violation as said of the value of `key`, under the schema of `prefix`.
    package func said(of key: String, under prefix: String = "") -> SchemaViolation {
        var violation = self
        violation.key = key
        violation.prefix = prefix
        return violation
    }
}
