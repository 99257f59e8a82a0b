import Foundation

/// A JSON document split into tokens in one validating pass, for ``InPlaceJSONDecoder``: each
/// value is where it lies in the bytes, and a container knows where the value after it starts,
/// so a decoder finds a member without building anything for the ones it skips.
///
/// It refuses (nil) what is not JSON, and what the in-place decoder leaves to `JSONDecoder`: a
/// key twice in one object (after escapes), an escaped UTF-16 surrogate without its other half in
/// a key, nesting deeper than 512.
struct JSONTokens {
    enum Kind: UInt8 {
        case object, array, string, number, `true`, `false`, null
    }

    struct Token {
        var kind: Kind
        /// A string with a backslash escape between its quotes.
        var hasEscapes = false
        /// A number without a fraction or an exponent.
        var isInteger = false
        /// The first byte: of a string, the one after its opening quote.
        var start: Int32
        /// One past the last byte: of a string, its closing quote.
        var end: Int32 = 0
        /// The token after this value and everything inside it.
        var next: Int32 = 0
        /// Members of an object, elements of an array.
        var count: Int32 = 0
    }

    /// The document's bytes: a copy of the value's, made once, so that nothing a decoding hands
    /// out (a `Decoder` a type keeps, say) can outlive them.
    let bytes: [UInt8]
    /// The values in document order: an object's members as a key token then its value's tokens.
    let tokens: [Token]

    /// The deepest nesting accepted, as JSONDecoder's.
    static let maximumDepth = 512

    init?(_ data: Data) {
        guard data.count < Int32.max else { return nil }
        let bytes = [UInt8](data)
        let scanned = bytes.withUnsafeBufferPointer { buffer -> [Token]? in
            var scanner = Scanner(bytes: buffer)
            return scanner.scanDocument() ? scanner.tokens : nil
        }
        guard let scanned else { return nil }
        self.bytes = bytes
        self.tokens = scanned
    }
}

extension JSONTokens {
    /// A recursive-descent scan that appends tokens and returns false at the first thing it
    /// does not accept.
    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var position = 0
        var tokens: [Token] = []

        init(bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
            tokens.reserveCapacity(min(bytes.count / 4 + 4, 4096))
        }

        mutating func scanDocument() -> Bool {
            skipWhitespace()
            guard scanValue(depth: 0) else { return false }
            skipWhitespace()
            return position == bytes.count
        }

        private mutating func skipWhitespace() {
            while position < bytes.count {
                switch bytes[position] {
                case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): position += 1
                default: return
                }
            }
        }

        private mutating func scanValue(depth: Int) -> Bool {
            guard position < bytes.count else { return false }
            switch bytes[position] {
            case UInt8(ascii: "{"): return scanContainer(.object, closing: UInt8(ascii: "}"), depth: depth + 1)
            case UInt8(ascii: "["): return scanContainer(.array, closing: UInt8(ascii: "]"), depth: depth + 1)
            case UInt8(ascii: "\""): return scanString() != nil
            case UInt8(ascii: "t"): return scanLiteral("true", as: .true)
            case UInt8(ascii: "f"): return scanLiteral("false", as: .false)
            case UInt8(ascii: "n"): return scanLiteral("null", as: .null)
            default: return scanNumber()
            }
        }

        /// Scans an object or an array at its opening bracket: its members (a key, a colon, a
        /// value) or elements, separated by commas, up to `closing`.
        private mutating func scanContainer(_ kind: Kind, closing: UInt8, depth: Int) -> Bool {
            guard depth <= JSONTokens.maximumDepth else { return false }
            let index = tokens.count
            tokens.append(Token(kind: kind, start: Int32(position)))
            position += 1
            skipWhitespace()
            var count: Int32 = 0
            if position < bytes.count, bytes[position] == closing {
                position += 1
            } else {
                while true {
                    if kind == .object {
                        guard scanKey() else { return false }
                    }
                    guard scanValue(depth: depth) else { return false }
                    count += 1
                    skipWhitespace()
                    guard position < bytes.count else { return false }
                    if bytes[position] == UInt8(ascii: ",") {
                        position += 1
                        skipWhitespace()
                    } else if bytes[position] == closing {
                        position += 1
                        break
                    } else {
                        return false
                    }
                }
            }
            tokens[index].end = Int32(position)
            tokens[index].next = Int32(tokens.count)
            tokens[index].count = count
            return kind != .object || hasDistinctKeys(object: index)
        }

        /// Scans a member's key and its colon, up to the value.
        private mutating func scanKey() -> Bool {
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\""), let key = scanString(),
                !tokens[key].hasEscapes || JSONTokens.unescaped(keyBytes(key)) != nil
            else { return false }
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { return false }
            position += 1
            skipWhitespace()
            return true
        }

        /// Scans a string at its opening quote; returns its token's index.
        private mutating func scanString() -> Int? {
            position += 1
            let start = position
            var hasEscapes = false
            while position < bytes.count {
                let byte = bytes[position]
                switch byte {
                case UInt8(ascii: "\""):
                    tokens.append(
                        Token(
                            kind: .string, hasEscapes: hasEscapes, start: Int32(start), end: Int32(position),
                            next: Int32(tokens.count + 1)))
                    position += 1
                    return tokens.count - 1
                case UInt8(ascii: "\\"):
                    hasEscapes = true
                    guard scanEscape() else { return nil }
                case 0..<0x20:
                    return nil
                case 0x80...:
                    guard skipUTF8Sequence() else { return nil }
                default:
                    position += 1
                }
            }
            return nil
        }

        /// Checks an escape at its backslash and moves past it.
        private mutating func scanEscape() -> Bool {
            guard position + 1 < bytes.count else { return false }
            switch bytes[position + 1] {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                position += 2
                return true
            case UInt8(ascii: "u"):
                guard position + 5 < bytes.count else { return false }
                for offset in 2...5 where JSONTokens.hexDigitValue(bytes[position + offset]) == nil { return false }
                position += 6
                return true
            default:
                return false
            }
        }

        /// Moves past one well-formed UTF-8 sequence of two to four bytes (Unicode's table 3-7:
        /// no overlong forms, no surrogates, nothing above U+10FFFF).
        private mutating func skipUTF8Sequence() -> Bool {
            let lead = bytes[position]
            let length: Int
            var secondRange: ClosedRange<UInt8> = 0x80...0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; secondRange = 0xA0...0xBF
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; secondRange = 0x80...0x9F
            case 0xF0: length = 4; secondRange = 0x90...0xBF
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; secondRange = 0x80...0x8F
            default: return false
            }
            guard position + length <= bytes.count, secondRange.contains(bytes[position + 1]) else { return false }
            for offset in 2..<length where !(0x80...0xBF).contains(bytes[position + offset]) { return false }
            position += length
            return true
        }

        /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
        private mutating func scanNumber() -> Bool {
            let start = position
            if bytes[position] == UInt8(ascii: "-") { position += 1 }
            guard position < bytes.count else { return false }
            if bytes[position] == UInt8(ascii: "0") {
                position += 1
            } else {
                guard skipDigits() else { return false }
            }
            var isInteger = true
            if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
                isInteger = false
                position += 1
                guard skipDigits() else { return false }
            }
            if position < bytes.count, bytes[position] | 0x20 == UInt8(ascii: "e") {
                isInteger = false
                position += 1
                if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                    position += 1
                }
                guard skipDigits() else { return false }
            }
            tokens.append(
                Token(kind: .number, isInteger: isInteger, start: Int32(start), end: Int32(position), next: Int32(tokens.count + 1)))
            return true
        }

        /// Moves past one or more ASCII digits.
        private mutating func skipDigits() -> Bool {
            let start = position
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { position += 1 }
            return position > start
        }

        private mutating func scanLiteral(_ literal: StaticString, as kind: Kind) -> Bool {
            let length = literal.utf8CodeUnitCount
            guard position + length <= bytes.count,
                memcmp(bytes.baseAddress! + position, literal.utf8Start, length) == 0
            else { return false }
            tokens.append(Token(kind: kind, start: Int32(position), end: Int32(position + length), next: Int32(tokens.count + 1)))
            position += length
            return true
        }

        /// Whether no key occurs twice among the object's members (JSONDecoder's choice between
        /// the two is left to it).
        private func hasDistinctKeys(object: Int) -> Bool {
            let count = Int(tokens[object].count)
            if count <= 16 {
                var later = object + 1
                for laterOrdinal in 0..<count {
                    var earlier = object + 1
                    for _ in 0..<laterOrdinal {
                        if isSameKey(earlier, later) { return false }
                        earlier = Int(tokens[earlier + 1].next)
                    }
                    later = Int(tokens[later + 1].next)
                }
                return true
            }
            var keys = Set<String>(minimumCapacity: count)
            var member = object + 1
            for _ in 0..<count {
                let bytes = keyBytes(member)
                let key = tokens[member].hasEscapes ? JSONTokens.unescaped(bytes)! : String(decoding: bytes, as: UTF8.self)
                guard keys.insert(key).inserted else { return false }
                member = Int(tokens[member + 1].next)
            }
            return true
        }

        private func keyBytes(_ token: Int) -> UnsafeBufferPointer<UInt8> {
            UnsafeBufferPointer(rebasing: bytes[Int(tokens[token].start)..<Int(tokens[token].end)])
        }

        private func isSameKey(_ first: Int, _ second: Int) -> Bool {
            let a = keyBytes(first), b = keyBytes(second)
            if tokens[first].hasEscapes || tokens[second].hasEscapes {
                return JSONTokens.unescaped(a) == JSONTokens.unescaped(b)
            }
            return a.count == b.count && (a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
        }
    }

    static func hexDigitValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
