import Foundation
import SharedStateWire

extension JSONTokens {
    /// The value of a `true` or `false` token.
    func bool(at index: Int) -> Bool? {
        switch tokens[index].kind {
        case .true: true
        case .false: false
        default: nil
        }
    }

    /// A string token's text, its escapes resolved; nil for another kind, or for an escaped
    /// UTF-16 surrogate without its other half.
    func string(at index: Int) -> String? {
        let token = tokens[index]
        guard token.kind == .string else { return nil }
        return bytes.withUnsafeBufferPointer { buffer in
            let text = UnsafeBufferPointer(rebasing: buffer[Int(token.start)..<Int(token.end)])
            return token.hasEscapes ? Self.unescaped(text) : String(decoding: text, as: UTF8.self)
        }
    }

    /// An integer token as `Integer`, or nil when it has a fraction or an exponent, or does
    /// not fit.
    func integer<Integer: FixedWidthInteger>(at index: Int, as type: Integer.Type = Integer.self) -> Integer? {
        let token = tokens[index]
        guard token.kind == .number, token.isInteger else { return nil }
        var position = Int(token.start)
        let isNegative = bytes[position] == UInt8(ascii: "-")
        if isNegative {
            guard Integer.isSigned else { return nil }
            position += 1
        }
        var value: Integer = 0
        while position < Int(token.end) {
            let digit = Integer(bytes[position] &- UInt8(ascii: "0"))
            let (shifted, overflowed) = value.multipliedReportingOverflow(by: 10)
            let (next, overflowedAgain) =
                isNegative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            guard !overflowed, !overflowedAgain else { return nil }
            value = next
            position += 1
        }
        return value
    }

    /// A number token as a `Double`, correctly rounded; nil when it does not fit (JSONDecoder
    /// refuses a number that overflows, or that underflows to zero).
    func double(at index: Int) -> Double? {
        guard let text = numberText(at: index), let value = Double(text), value.isFinite,
            value != 0 || !hasNonzeroDigit(at: index)
        else { return nil }
        return value
    }

    /// A number token as a `Float`, correctly rounded from its digits; nil when it does not fit.
    func float(at index: Int) -> Float? {
        guard let text = numberText(at: index), let value = Float(text), value.isFinite,
            value != 0 || !hasNonzeroDigit(at: index)
        else { return nil }
        return value
    }

    private func numberText(at index: Int) -> String? {
        let token = tokens[index]
        guard token.kind == .number else { return nil }
        return String(decoding: bytes[Int(token.start)..<Int(token.end)], as: UTF8.self)
    }

    /// Whether a digit before the exponent is not zero: the number is not zero.
    private func hasNonzeroDigit(at index: Int) -> Bool {
        for byte in bytes[Int(tokens[index].start)..<Int(tokens[index].end)] {
            if byte | 0x20 == UInt8(ascii: "e") { return false }
            if (UInt8(ascii: "1")...UInt8(ascii: "9")).contains(byte) { return true }
        }
        return false
    }

    /// Whether the key token at `index` is `name`.
    func isKey(at index: Int, named name: String) -> Bool {
        let token = tokens[index]
        if token.hasEscapes { return string(at: index) == name }
        let length = Int(token.end - token.start)
        guard name.utf8.count == length else { return false }
        var name = name
        return name.withUTF8 { name in
            length == 0 || bytes.withUnsafeBufferPointer { memcmp($0.baseAddress! + Int(token.start), name.baseAddress!, length) == 0 }
        }
    }
}
