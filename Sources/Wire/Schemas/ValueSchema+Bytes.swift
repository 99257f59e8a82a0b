import Foundation

extension ValueSchema {
    /// Whether `value`, one JSON document, satisfies the schema: found in its bytes, without
    /// building the value, so that a write under a schema costs little more than one without.
    ///
    /// It never accepts what ``firstViolation(of:)`` refuses: it checks by the same rules, and
    /// leaves to it what it does not look into itself (an `enum` or a `const` that is not all
    /// strings, `uniqueItems`, `pattern`, escapes). It may refuse what that accepts (a member
    /// twice, choices equal to a string only as Swift compares strings): a refused value is
    /// always checked again by ``firstViolation(of:)``, which decides and says where and why.
    package func accepts(json value: Data) -> Bool {
        value.withUnsafeBytes { raw in
            // A member twice is checked each time it occurs: stricter, never looser.
            guard let tokens = JSONTokens.tokens(in: raw, allowingRepeatedKeys: true) else {
                return (try? JSONValue(parsing: value)).map { firstViolation(of: $0) == nil } ?? false
            }
            return accepts(token: 0, tokens, raw.assumingMemoryBound(to: UInt8.self))
        }
    }

    private func accepts(token index: Int, _ tokens: [JSONTokens.Token], _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        if rules.refusesEverything { return false }
        let token = tokens[index]
        switch token.kind {
        case .object:
            if rules.types?.contains(.object) == false { return false }
            if rules.allowed != nil || rules.constant != nil { return acceptsBuilt(index, tokens, bytes) }
            let count = Int(token.count)
            // Members counted as they occur: a repeated one would count twice toward a minimum.
            if rules.minProperties != nil { return acceptsBuilt(index, tokens, bytes) }
            if let maxProperties = rules.maxProperties, count > maxProperties { return false }
            for name in rules.requiredNames where Self.member(named: name, of: index, tokens, bytes) == nil { return false }
            var member = index + 1
            for _ in 0..<count {
                let name = tokens[member]
                if name.hasEscapes { return acceptsBuilt(index, tokens, bytes) }
                let nameBytes = UnsafeBufferPointer(rebasing: bytes[Int(name.start)..<Int(name.end)])
                if let property = rules.propertyNames.firstIndex(where: { Self.equal($0, nameBytes) }) {
                    if !rules.propertySchemas[property].accepts(token: member + 1, tokens, bytes) { return false }
                } else if let additional = rules.additionalProperties {
                    if !additional.accepts(token: member + 1, tokens, bytes) { return false }
                }
                member = Int(tokens[member + 1].next)
            }
            return true
        case .array:
            if rules.types?.contains(.array) == false { return false }
            if rules.allowed != nil || rules.constant != nil || rules.uniqueItems { return acceptsBuilt(index, tokens, bytes) }
            let count = Int(token.count)
            if let minItems = rules.minItems, count < minItems { return false }
            if let maxItems = rules.maxItems, count > maxItems { return false }
            var element = index + 1
            for position in 0..<count {
                let schema = position < rules.prefixItems.count ? rules.prefixItems[position] : rules.items
                if let schema, !schema.accepts(token: element, tokens, bytes) { return false }
                element = Int(tokens[element].next)
            }
            return true
        case .string:
            // Its type, choices and length are found in its bytes: no `String` made.
            let choicesInBytes = (rules.allowed == nil && rules.constant == nil) || rules.allowedStrings != nil
            guard choicesInBytes && rules.pattern == nil && !token.hasEscapes else { return acceptsBuilt(index, tokens, bytes) }
            if rules.types?.contains(.string) == false { return false }
            let text = UnsafeBufferPointer(rebasing: bytes[Int(token.start)..<Int(token.end)])
            if let choices = rules.allowedStrings, !choices.contains(where: { Self.equal($0, text) }) { return false }
            guard rules.minLength != nil || rules.maxLength != nil else { return true }
            // Code points: the bytes that do not continue one.
            var length = 0
            for byte in text where byte & 0xC0 != 0x80 { length += 1 }
            return length >= (rules.minLength ?? 0) && length <= (rules.maxLength ?? .max)
        case .number:
            let number = Self.number(tokens[index], bytes)
            if rules.allowed != nil || rules.constant != nil { return firstViolation(of: .number(number)) == nil }
            return accepts(number)
        case .true, .false, .null:
            // Of a literal, only its type counts, unless it has choices.
            guard rules.allowed == nil && rules.constant == nil else {
                return firstViolation(of: token.kind == .null ? .null : .bool(token.kind == .true)) == nil
            }
            return rules.types?.contains(token.kind == .null ? .null : .boolean) ?? true
        }
    }

    /// Whether `number` keeps the rules ``firstViolation(of:)`` checks a number against, but for
    /// `enum` and `const`: without the violation it would make.
    private func accepts(_ number: Double) -> Bool {
        if let types = rules.types {
            let isInteger = number.rounded() == number && number.isFinite
            guard types.contains(.number) || (isInteger && types.contains(.integer)) else { return false }
        }
        if let minimum = rules.minimum, number < minimum { return false }
        if let maximum = rules.maximum, number > maximum { return false }
        if let exclusiveMinimum = rules.exclusiveMinimum, number <= exclusiveMinimum { return false }
        if let exclusiveMaximum = rules.exclusiveMaximum, number >= exclusiveMaximum { return false }
        if let multipleOf = rules.multipleOf, !Self.isMultiple(number, of: multipleOf) { return false }
        return true
    }

    /// The verdict of ``firstViolation(of:)`` on the value at `index`, built.
    private func acceptsBuilt(_ index: Int, _ tokens: [JSONTokens.Token], _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var next = index
        return firstViolation(of: JSONValue.value(at: &next, in: tokens, bytes: bytes)) == nil
    }

    /// The value token of the member of the object at `object` whose name is `name`, compared as
    /// bytes (a name with escapes is compared once they are resolved).
    private static func member(
        named name: [UInt8], of object: Int, _ tokens: [JSONTokens.Token], _ bytes: UnsafeBufferPointer<UInt8>
    ) -> Int? {
        var member = object + 1
        for _ in 0..<tokens[object].count {
            let token = tokens[member]
            let text = UnsafeBufferPointer(rebasing: bytes[Int(token.start)..<Int(token.end)])
            if token.hasEscapes ? JSONTokens.unescaped(text).map({ Array($0.utf8) == name }) == true : equal(name, text) {
                return member + 1
            }
            member = Int(tokens[member + 1].next)
        }
        return nil
    }

    private static func equal(_ name: [UInt8], _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        name.count == bytes.count
            && name.withUnsafeBufferPointer { name in name.isEmpty || memcmp(name.baseAddress!, bytes.baseAddress!, name.count) == 0 }
    }

    /// A number token's value, as ``JSONValue/init(parsing:)`` reads it.
    private static func number(_ token: JSONTokens.Token, _ bytes: UnsafeBufferPointer<UInt8>) -> Double {
        let text = UnsafeBufferPointer(rebasing: bytes[Int(token.start)..<Int(token.end)])
        // A whole number of up to 18 digits is exact in an Int64, and converted as Double(String) rounds it.
        if token.isInteger && text.count <= 18 {
            var value: Int64 = 0
            var isNegative = false
            for byte in text {
                if byte == UInt8(ascii: "-") { isNegative = true } else { value = value * 10 + Int64(byte &- UInt8(ascii: "0")) }
            }
            return Double(isNegative ? -value : value)
        }
        return JSONValue.number(text)
    }
}
