/// Checks that bytes are exactly one JSON document (RFC 8259) without building any objects.
///
/// syncd stores values as the bytes clients sent, so it only needs to know they are well-formed:
/// valid UTF-8, one value with optional surrounding whitespace, nesting no deeper than a limit.
/// Decoding into `Codable` types happens in clients, never on the daemon's write path.
///
/// ```swift
/// try JSONValidator.validate(Array(#"{"on":true}"#.utf8))
/// ```
public struct JSONValidator {
    /// Why a document was refused and the byte offset where that became clear.
    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        /// What is wrong, for a person.
        public var reason: String
        /// The offset of the offending byte.
        public var offset: Int

        public var description: String { "\(reason) at byte \(offset)" }
    }

    /// Validates `bytes` as one JSON document.
    ///
    /// Inlinable, so that a caller's `Data` or array is specialized where it is called and its
    /// bytes reached directly, not through the protocol at run time.
    ///
    /// - Parameters:
    ///   - bytes: The document.
    ///   - maxDepth: The deepest nesting of arrays and objects allowed.
    /// - Throws: ``Failure`` naming the first problem.
    @inlinable
    public static func validate<Bytes: Sequence<UInt8>>(_ bytes: Bytes, maxDepth: Int = 100) throws(Failure) {
        let outcome: Failure?? = bytes.withContiguousStorageIfAvailable { (buffer) -> Failure? in
            do throws(Failure) {
                try validate(UnsafeRawBufferPointer(buffer), maxDepth: maxDepth)
                return nil
            } catch {
                return error
            }
        }
        switch outcome {
        case .some(.some(let failure)):
            throw failure
        case .some(.none):
            return
        case .none:
            try validate(Array(bytes), maxDepth: maxDepth)
        }
    }

    /// Validates the bytes in `buffer` as one JSON document.
    public static func validate(_ buffer: UnsafeRawBufferPointer, maxDepth: Int = 100) throws(Failure) {
        var validator = JSONValidator(bytes: buffer, maxDepth: maxDepth)
        validator.skipWhitespace()
        guard validator.position < buffer.count else {
            throw Failure(reason: "empty document", offset: 0)
        }
        try validator.value(depth: 0)
        validator.skipWhitespace()
        if validator.position < buffer.count {
            throw validator.failure("unexpected data after the JSON value")
        }
    }

    private let bytes: UnsafeRawBufferPointer
    private let maxDepth: Int
    private var position = 0

    private init(bytes: UnsafeRawBufferPointer, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

    private func failure(_ reason: String) -> Failure {
        if position >= bytes.count { return Failure(reason: "unexpected end of document (\(reason))", offset: position) }
        return Failure(reason: reason, offset: position)
    }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
            position += 1
        }
    }

    private mutating func value(depth: Int) throws(Failure) {
        guard let byte = current else { throw failure("expected a value") }
        switch byte {
        case UInt8(ascii: "{"): try object(depth: depth + 1)
        case UInt8(ascii: "["): try array(depth: depth + 1)
        case UInt8(ascii: "\""): try string()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
        default: throw failure("expected a value")
        }
    }

    private mutating func enter(depth: Int) throws(Failure) {
        if depth > maxDepth { throw failure("nesting deeper than \(maxDepth) levels") }
        position += 1
        skipWhitespace()
    }

    private mutating func object(depth: Int) throws(Failure) {
        try enter(depth: depth)
        if current == UInt8(ascii: "}") {
            position += 1
            return
        }
        while true {
            guard current == UInt8(ascii: "\"") else { throw failure("expected a string as object key") }
            try string()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw failure("expected ':' after object key") }
            position += 1
            skipWhitespace()
            try value(depth: depth)
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                position += 1
                skipWhitespace()
            case UInt8(ascii: "}"):
                position += 1
                return
            default:
                throw failure("expected ',' or '}' in object")
            }
        }
    }

    private mutating func array(depth: Int) throws(Failure) {
        try enter(depth: depth)
        if current == UInt8(ascii: "]") {
            position += 1
            return
        }
        while true {
            try value(depth: depth)
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                position += 1
                skipWhitespace()
            case UInt8(ascii: "]"):
                position += 1
                return
            default:
                throw failure("expected ',' or ']' in array")
            }
        }
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let length = word.utf8CodeUnitCount
        guard position + length <= bytes.count else {
            position = bytes.count
            throw failure("invalid literal")
        }
        for index in 0..<length where bytes[position + index] != word.utf8Start[index] {
            position += index
            throw failure("invalid literal, expected \(word)")
        }
        position += length
    }

    private mutating func digits() -> Int {
        let start = position
        while let byte = current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { position += 1 }
        return position - start
    }

    private mutating func number() throws(Failure) {
        if current == UInt8(ascii: "-") { position += 1 }
        if current == UInt8(ascii: "0") {
            position += 1
        } else if digits() == 0 {
            throw failure("expected a digit")
        }
        if current == UInt8(ascii: ".") {
            position += 1
            if digits() == 0 { throw failure("expected a digit after '.'") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            position += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
            if digits() == 0 { throw failure("expected a digit in exponent") }
        }
    }

    private mutating func string() throws(Failure) {
        position += 1  // opening quote
        while true {
            // Most of a string is printable ASCII other than a quote or a backslash: passed over
            // eight bytes at a time, then byte by byte, without the optional and the switch
            // below for each byte.
            while bytes.count - position >= 8, Self.isPlainText(bytes.loadUnaligned(fromByteOffset: position, as: UInt64.self)) {
                position += 8
            }
            while position < bytes.count {
                let byte = bytes[position]
                guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") else { break }
                position += 1
            }
            guard let byte = current else { throw failure("unterminated string") }
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                return
            case UInt8(ascii: "\\"):
                position += 1
                try escape()
            case 0..<0x20:
                throw failure("control character in string")
            case 0x20..<0x80:
                position += 1
            default:
                try multibyteScalar()
            }
        }
    }

    /// Whether none of the eight bytes of `word` is a control character, a quote, a backslash
    /// or part of a multibyte sequence. Each test below finds whether any byte matches, exactly:
    /// a borrow can only mark a byte above one that matched.
    private static func isPlainText(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        func hasZeroByte(_ word: UInt64) -> Bool { (word &- ones) & ~word & highBits != 0 }
        let hasControl = (word &- ones &* 0x20) & ~word & highBits != 0
        return word & highBits == 0 && !hasControl && !hasZeroByte(word ^ (ones &* 0x22)) && !hasZeroByte(word ^ (ones &* 0x5C))
    }

    private mutating func escape() throws(Failure) {
        guard let byte = current else { throw failure("unterminated escape") }
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
            UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            position += 1
        case UInt8(ascii: "u"):
            position += 1
            for _ in 0..<4 {
                guard let digit = current, isHexDigit(digit) else { throw failure("expected 4 hex digits after \\u") }
                position += 1
            }
        default:
            throw failure("invalid escape")
        }
    }

    private func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }

    /// Consumes one well-formed UTF-8 sequence of 2–4 bytes (no overlongs, no surrogates, ≤ U+10FFFF).
    private mutating func multibyteScalar() throws(Failure) {
        let lead = bytes[position]
        let length: Int
        var lower: UInt8 = 0x80
        var upper: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: (length, lower) = (3, 0xA0)
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: (length, upper) = (3, 0x9F)
        case 0xF0: (length, lower) = (4, 0x90)
        case 0xF1...0xF3: length = 4
        case 0xF4: (length, upper) = (4, 0x8F)
        default: throw failure("invalid UTF-8")
        }
        guard position + length <= bytes.count else { throw failure("invalid UTF-8") }
        for index in 1..<length {
            let continuation = bytes[position + index]
            let (low, high) = index == 1 ? (lower, upper) : (0x80, 0xBF)
            guard continuation >= low, continuation <= high else {
                position += index
                throw failure("invalid UTF-8")
            }
        }
        position += length
    }
}
