import Foundation

/// A JSON Schema document in the part of the 2020-12 vocabulary that configuration needs (issue
/// 57): what a value written under a key prefix must be.
///
/// Made from a document by ``init(document:)``, which refuses any keyword outside that part by
/// name rather than ignore it, and any keyword whose own value is not what the keyword takes.
/// ``firstViolation(of:)`` checks a value against it and names the first rule the value breaks,
/// where inside the value (a JSON Pointer), and the rule's limit.
///
/// `true` and `false` are schemas too, as in JSON Schema: anything, and nothing. Numbers are
/// compared as `Double`s (integers beyond 2^53 lose their last digits); `pattern` is matched by
/// `NSRegularExpression`, whose syntax covers the ECMA-262 expressions configuration uses.
///
/// A class: every write under a schema reaches it and its nested schemas, and a struct of some 30
/// fields was retained field by field at each copy, a quarter of syncd's CPU under a schema. What
/// the document says is read once into ``rules`` and never changes.
package final class ValueSchema: Sendable {
    /// The JSON types `type` names.
    package enum JSONType: String, Sendable, CaseIterable {
        case null, boolean, object, array, number, string, integer
    }

    /// Every keyword a schema may use; any other is refused.
    package static let keywords: Set<String> = [
        "type", "properties", "required", "additionalProperties", "items", "prefixItems", "enum", "const",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength",
        "pattern", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties", "default",
        "description", "title", "$comment",
    ]

    /// What the document says, read once.
    package let rules: Rules

    /// The annotations, for those who show the schema: never checked against.
    package var title: String? { rules.title }
    package var description: String? { rules.description }
    package var defaultValue: JSONValue? { rules.defaultValue }

    /// A `pattern`: its source, as the document gives it, and the expression made from it once.
    package struct Pattern: @unchecked Sendable {
        package let source: String
        // Immutable once made; NSRegularExpression matches from any thread.
        let expression: NSRegularExpression
    }

    /// The schema `document` describes.
    ///
    /// - Throws: ``SchemaError`` naming the keyword and where it is (a JSON Pointer into the
    ///   document) when the document uses a keyword outside ``keywords``, gives one a value it
    ///   does not take, or is not an object or a boolean.
    package convenience init(document: JSONValue) throws(SchemaError) {
        try self.init(document, at: "")
    }

    /// The schema `document` describes, where `pointer` says it is in the document read.
    fileprivate init(_ document: JSONValue, at pointer: String) throws(SchemaError) {
        rules = try Rules(document, at: pointer)
    }

    /// A schema's rules, as its document gives them.
    package struct Rules: Sendable {
        /// Whether the schema is `false`: no value satisfies it.
        package fileprivate(set) var refusesEverything = false
        package fileprivate(set) var types: [JSONType]?
        package fileprivate(set) var properties: [String: ValueSchema] = [:]
        package fileprivate(set) var required: [String] = []
        package fileprivate(set) var additionalProperties: ValueSchema?
        package fileprivate(set) var items: ValueSchema?
        package fileprivate(set) var prefixItems: [ValueSchema] = []
        package fileprivate(set) var allowed: [JSONValue]?
        package fileprivate(set) var constant: JSONValue?
        package fileprivate(set) var minimum: Double?
        package fileprivate(set) var maximum: Double?
        package fileprivate(set) var exclusiveMinimum: Double?
        package fileprivate(set) var exclusiveMaximum: Double?
        package fileprivate(set) var multipleOf: Double?
        package fileprivate(set) var minLength: Int?
        package fileprivate(set) var maxLength: Int?
        package fileprivate(set) var pattern: Pattern?
        package fileprivate(set) var minItems: Int?
        package fileprivate(set) var maxItems: Int?
        package fileprivate(set) var uniqueItems = false
        package fileprivate(set) var minProperties: Int?
        package fileprivate(set) var maxProperties: Int?
        /// The annotations: kept for those who show the schema, never checked against.
        package fileprivate(set) var defaultValue: JSONValue?
        package fileprivate(set) var title: String?
        package fileprivate(set) var description: String?
        /// ``properties``' names as UTF-8, with their schemas at the same index, and ``required``'s:
        /// what ``accepts(json:)`` compares a member's bytes with.
        fileprivate(set) var propertyNames: [[UInt8]] = []
        fileprivate(set) var propertySchemas: [ValueSchema] = []
        fileprivate(set) var requiredNames: [[UInt8]] = []
        /// `enum`'s (or `const`'s) choices as UTF-8, when all are strings.
        fileprivate(set) var allowedStrings: [[UInt8]]?

        fileprivate init(_ document: JSONValue, at pointer: String) throws(SchemaError) {
            let members: [String: JSONValue]
            switch document {
            case .bool(let allows):
                refusesEverything = !allows
                return
            case .object(let object):
                members = object
            default:
                throw SchemaError(pointer: pointer, "a schema must be an object or a boolean, not \(ValueSchema.kind(of: document))")
            }
            for name in members.keys.sorted() where !ValueSchema.keywords.contains(name) {
                throw SchemaError(pointer: pointer, "the keyword \(KeyRules.quoted(name)) is not one syncd checks")
            }
            for (name, value) in members.sorted(by: { $0.key < $1.key }) {
                try read(name, value, at: pointer + "/" + ValueSchema.escaped(name))
            }
            if let minimum = minLength, let maximum = maxLength, minimum > maximum {
                throw SchemaError(pointer: pointer, "minLength \(minimum) is above maxLength \(maximum)")
            }
            if let minimum = minItems, let maximum = maxItems, minimum > maximum {
                throw SchemaError(pointer: pointer, "minItems \(minimum) is above maxItems \(maximum)")
            }
            if let minimum = minProperties, let maximum = maxProperties, minimum > maximum {
                throw SchemaError(pointer: pointer, "minProperties \(minimum) is above maxProperties \(maximum)")
            }
            for (name, schema) in properties.sorted(by: { $0.key < $1.key }) {
                propertyNames.append(Array(name.utf8))
                propertySchemas.append(schema)
            }
            requiredNames = required.map { Array($0.utf8) }
            // Strings only (as configuration's choices are): compared as bytes where they lie.
            let choices = allowed ?? constant.map { [$0] }
            allowedStrings = choices?.compactMap { choice -> [UInt8]? in
                if case .string(let text) = choice { return Array(text.utf8) }
                return nil
            }
            if allowedStrings?.count != choices?.count { allowedStrings = nil }
        }

        // swiftlint:disable:next cyclomatic_complexity function_body_length
        private mutating func read(_ keyword: String, _ value: JSONValue, at pointer: String) throws(SchemaError) {
            switch keyword {
            case "type":
                let names: [JSONValue]
                if case .array(let list) = value { names = list } else { names = [value] }
                var types: [JSONType] = []
                for name in names {
                    guard case .string(let text) = name, let type = JSONType(rawValue: text) else {
                        throw SchemaError(
                            pointer: pointer,
                            "type takes one of \(JSONType.allCases.map(\.rawValue).joined(separator: ", ")), or a list of them")
                    }
                    types.append(type)
                }
                guard !types.isEmpty else { throw SchemaError(pointer: pointer, "type names no type") }
                self.types = types
            case "properties":
                guard case .object(let members) = value else {
                    throw SchemaError(pointer: pointer, "properties takes an object of schemas")
                }
                // In order, so that of several faults the same one is named every time.
                for (name, member) in members.sorted(by: { $0.key < $1.key }) {
                    properties[name] = try ValueSchema(member, at: pointer + "/" + ValueSchema.escaped(name))
                }
            case "required":
                guard case .array(let names) = value else { throw SchemaError(pointer: pointer, "required takes a list of names") }
                for name in names {
                    guard case .string(let text) = name else { throw SchemaError(pointer: pointer, "required takes a list of names") }
                    required.append(text)
                }
            case "additionalProperties":
                additionalProperties = (try ValueSchema(value, at: pointer))
            case "items":
                items = (try ValueSchema(value, at: pointer))
            case "prefixItems":
                guard case .array(let schemas) = value, !schemas.isEmpty else {
                    throw SchemaError(pointer: pointer, "prefixItems takes a list of schemas")
                }
                for (index, schema) in schemas.enumerated() {
                    prefixItems.append((try ValueSchema(schema, at: pointer + "/\(index)")))
                }
            case "enum":
                guard case .array(let values) = value, !values.isEmpty else {
                    throw SchemaError(pointer: pointer, "enum takes a list of values")
                }
                allowed = values
            case "const":
                constant = value
            case "minimum": minimum = try Self.number(value, keyword, at: pointer)
            case "maximum": maximum = try Self.number(value, keyword, at: pointer)
            case "exclusiveMinimum": exclusiveMinimum = try Self.number(value, keyword, at: pointer)
            case "exclusiveMaximum": exclusiveMaximum = try Self.number(value, keyword, at: pointer)
            case "multipleOf":
                let divisor = try Self.number(value, keyword, at: pointer)
                guard divisor > 0 else { throw SchemaError(pointer: pointer, "multipleOf takes a number above 0") }
                multipleOf = divisor
            case "minLength": minLength = try Self.count(value, keyword, at: pointer)
            case "maxLength": maxLength = try Self.count(value, keyword, at: pointer)
            case "minItems": minItems = try Self.count(value, keyword, at: pointer)
            case "maxItems": maxItems = try Self.count(value, keyword, at: pointer)
            case "minProperties": minProperties = try Self.count(value, keyword, at: pointer)
            case "maxProperties": maxProperties = try Self.count(value, keyword, at: pointer)
            case "pattern":
                guard case .string(let source) = value else { throw SchemaError(pointer: pointer, "pattern takes a regular expression") }
                do {
                    pattern = Pattern(source: source, expression: try NSRegularExpression(pattern: source))
                } catch {
                    throw SchemaError(pointer: pointer, "pattern \(KeyRules.quoted(source)) is not a regular expression")
                }
            case "uniqueItems":
                guard case .bool(let flag) = value else { throw SchemaError(pointer: pointer, "uniqueItems takes true or false") }
                uniqueItems = flag
            case "default":
                defaultValue = value
            case "title", "description", "$comment":
                guard case .string(let text) = value else { throw SchemaError(pointer: pointer, "\(keyword) takes a string") }
                if keyword == "title" { title = text } else if keyword == "description" { description = text }
            default:
                throw SchemaError(pointer: pointer, "the keyword \(KeyRules.quoted(keyword)) is not one syncd checks")
            }
        }

        private static func number(_ value: JSONValue, _ keyword: String, at pointer: String) throws(SchemaError) -> Double {
            guard case .number(let number) = value else { throw SchemaError(pointer: pointer, "\(keyword) takes a number") }
            return number
        }

        private static func count(_ value: JSONValue, _ keyword: String, at pointer: String) throws(SchemaError) -> Int {
            guard case .number(let number) = value, number >= 0, number.rounded() == number, number < 1e15 else {
                throw SchemaError(pointer: pointer, "\(keyword) takes a whole number, 0 or more")
            }
            return Int(number)
        }
    }

    // MARK: Checking values

    /// The first rule `value` breaks, in the order the checks run (the value's type, its own
    /// rules, then its members and elements in order), or nil when it satisfies the schema.
    package func firstViolation(of value: JSONValue) -> SchemaViolation? {
        firstViolation(of: value, at: "")
    }

    // swiftlint:disable:next cyclomatic_complexity function_body_length
    private func firstViolation(of value: JSONValue, at pointer: String) -> SchemaViolation? {
        func broken(_ rule: String, _ limit: String, _ why: String) -> SchemaViolation {
            SchemaViolation(pointer: pointer, rule: rule, limit: limit, found: value, reason: why)
        }
        if rules.refusesEverything { return broken("false", "false", "no value is allowed here") }
        if let types = rules.types, !types.contains(where: { Self.value(value, is: $0) }) {
            let names = types.map(\.rawValue)
            let expected = names.count == 1 ? names[0] : names.dropLast().joined(separator: ", ") + " or " + names.last!
            return broken("type", names.joined(separator: ","), "\(Self.kind(of: value)), not \(Self.article(expected))")
        }
        // `JSONValue`'s equality is JSON Schema's: numbers by value, objects whatever their order.
        if let allowed = rules.allowed, !allowed.contains(value) {
            return broken(
                "enum", allowed.map(\.jsonText).joined(separator: ", "), "not one of \(allowed.map(\.jsonText).joined(separator: ", "))")
        }
        if let constant = rules.constant, constant != value {
            return broken("const", constant.jsonText, "not \(constant.jsonText)")
        }
        switch value {
        case .number(let number):
            if let minimum = rules.minimum, number < minimum {
                return broken("minimum", Self.text(minimum), "below the minimum \(Self.text(minimum))")
            }
            if let maximum = rules.maximum, number > maximum {
                return broken("maximum", Self.text(maximum), "above the maximum \(Self.text(maximum))")
            }
            if let exclusiveMinimum = rules.exclusiveMinimum, number <= exclusiveMinimum {
                return broken("exclusiveMinimum", Self.text(exclusiveMinimum), "not above \(Self.text(exclusiveMinimum))")
            }
            if let exclusiveMaximum = rules.exclusiveMaximum, number >= exclusiveMaximum {
                return broken("exclusiveMaximum", Self.text(exclusiveMaximum), "not below \(Self.text(exclusiveMaximum))")
            }
            if let multipleOf = rules.multipleOf, !Self.isMultiple(number, of: multipleOf) {
                return broken("multipleOf", Self.text(multipleOf), "not a multiple of \(Self.text(multipleOf))")
            }
        case .string(let string):
            // JSON Schema counts characters as Unicode scalars.
            let length = string.unicodeScalars.count
            if let minLength = rules.minLength, length < minLength {
                return broken("minLength", "\(minLength)", "shorter than \(minLength) characters")
            }
            if let maxLength = rules.maxLength, length > maxLength {
                return broken("maxLength", "\(maxLength)", "longer than \(maxLength) characters")
            }
            if let pattern = rules.pattern {
                let range = NSRange(string.startIndex..., in: string)
                if pattern.expression.firstMatch(in: string, range: range) == nil {
                    return broken("pattern", pattern.source, "does not match the pattern \(KeyRules.quoted(pattern.source))")
                }
            }
        case .array(let elements):
            if let minItems = rules.minItems, elements.count < minItems {
                return broken("minItems", "\(minItems)", "has fewer than \(minItems) items")
            }
            if let maxItems = rules.maxItems, elements.count > maxItems {
                return broken("maxItems", "\(maxItems)", "has more than \(maxItems) items")
            }
            if rules.uniqueItems {
                for later in elements.indices.dropFirst() {
                    if let earlier = elements[..<later].firstIndex(of: elements[later]) {
                        return broken("uniqueItems", "true", "has item \(later) equal to item \(earlier)")
                    }
                }
            }
            for (index, element) in elements.enumerated() {
                let schema = index < rules.prefixItems.count ? rules.prefixItems[index] : rules.items
                if let violation = schema?.firstViolation(of: element, at: pointer + "/\(index)") { return violation }
            }
        case .object(let members):
            if let minProperties = rules.minProperties, members.count < minProperties {
                return broken("minProperties", "\(minProperties)", "has fewer than \(minProperties) members")
            }
            if let maxProperties = rules.maxProperties, members.count > maxProperties {
                return broken("maxProperties", "\(maxProperties)", "has more than \(maxProperties) members")
            }
            for name in rules.required where members[name] == nil {
                return SchemaViolation(
                    pointer: pointer + "/" + Self.escaped(name), rule: "required", limit: name, found: nil, reason: "missing")
            }
            for name in members.keys.sorted() {
                let member = members[name]!
                let memberPointer = pointer + "/" + Self.escaped(name)
                if let schema = rules.properties[name] {
                    if let violation = schema.firstViolation(of: member, at: memberPointer) { return violation }
                } else if let schema = rules.additionalProperties {
                    if schema.rules.refusesEverything {
                        return SchemaViolation(
                            pointer: memberPointer, rule: "additionalProperties", limit: "false", found: member,
                            reason: "not a member the schema names")
                    }
                    if let violation = schema.firstViolation(of: member, at: memberPointer) { return violation }
                }
            }
        case .null, .bool:
            break
        }
        return nil
    }

    private static func value(_ value: JSONValue, is type: JSONType) -> Bool {
        switch (type, value) {
        case (.null, .null), (.boolean, .bool), (.object, .object), (.array, .array), (.number, .number), (.string, .string): true
        case (.integer, .number(let number)): number.rounded() == number && number.isFinite
        default: false
        }
    }

    static func isMultiple(_ number: Double, of divisor: Double) -> Bool {
        // Whole numbers: the remainder, which is exact.
        if divisor.rounded() == divisor && number.rounded() == number { return number.truncatingRemainder(dividingBy: divisor) == 0 }
        // Decimal divisors (0.1, 0.01) leave quotients a rounding error away from whole: a small
        // one, not one that grows with the quotient (which would make every large number a multiple).
        let quotient = number / divisor
        return abs(quotient - quotient.rounded()) <= 1e-9
    }

    /// A number as JSON writes it: whole numbers without a fraction.
    static func text(_ number: Double) -> String { JSONValue.number(number).jsonText }

    package static func kind(of value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .number(let number): number.rounded() == number ? "an integer" : "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    private static func article(_ name: String) -> String {
        name == "null" ? name : (name.first.map { "aeio".contains($0) } == true ? "an " : "a ") + name
    }

    /// A member name as a JSON Pointer's reference token writes it (RFC 6901).
    package static func escaped(_ name: String) -> String {
        name.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }
}

/// A schema document that cannot be used: the keyword at fault and where it is.
package struct SchemaError: Error, Equatable, CustomStringConvertible {
    /// Where in the schema document, as a JSON Pointer ("" for the document itself).
    package let pointer: String
    package let message: String

    init(pointer: String, _ message: String) {
        self.pointer = pointer
        self.message = message
    }

    package var description: String { pointer.isEmpty ? message : "\(pointer): \(message)" }
}
