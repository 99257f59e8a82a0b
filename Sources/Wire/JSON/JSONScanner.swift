/// The package's one JSON grammar (RFC 8259): a validating pass over a document's bytes that
/// tells a ``JSONTokenSink`` what it finds, where, and stops at the first thing that is not JSON
/// with a ``JSONValidator/Failure`` naming it and its offset. Each step returns whether it went
/// on (a thrown error per step cost the client's decoding 7%).
///
/// It checks UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF), escapes, numbers,
/// literals, commas and colons, one value with optional whitespace around it, and nesting no
/// deeper than a limit. syncd's check of every value (``JSONValidator``, with a sink that keeps
/// nothing) and the client's in-place decoding (``JSONTokens``, with a sink that keeps the
/// tokens) are this one pass, specialized for their sink.
struct JSONScanner<Sink: JSONTokenSink> {
    private let bytes: UnsafeRawBufferPointer
    private let maxDepth: Int
    private var position = 0
    private(set) var sink: Sink
    /// Why the scan stopped, once ``scanDocument()`` returned false.
    private(set) var failure: JSONValidator.Failure?

    init(bytes: UnsafeRawBufferPointer, maxDepth: Int, sink: Sink) {
        self.bytes = bytes
        self.maxDepth = maxDepth
        self.sink = sink
    }

    /// Scans the whole document; false, with ``failure`` set, at the first thing that is not
    /// JSON or that the sink refuses.
    mutating func scanDocument() -> Bool {
        skipWhitespace()
        guard position < bytes.count else { return fail("empty document", at: 0) }
        guard value(depth: 0) else { return false }
        skipWhitespace()
        if position < bytes.count { return fail("unexpected data after the JSON value") }
        return true
    }

    @inline(__always) private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

    /// Records why the scan stops, at `offset` (the current position when nil); returns false.
    private mutating func fail(_ reason: String, at offset: Int? = nil) -> Bool {
        if let offset {
            failure = JSONValidator.Failure(reason: reason, offset: offset)
        } else if position >= bytes.count {
            failure = JSONValidator.Failure(reason: "unexpected end of document (\(reason))", offset: position)
        } else {
            failure = JSONValidator.Failure(reason: reason, offset: position)
        }
        return false
    }

    @inline(__always) private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
            position += 1
        }
    }

    private mutating func value(depth: Int) -> Bool {
        guard let byte = current else { return fail("expected a value") }
        switch byte {
        case UInt8(ascii: "{"): return container(.object, closing: UInt8(ascii: "}"), depth: depth + 1)
        case UInt8(ascii: "["): return container(.array, closing: UInt8(ascii: "]"), depth: depth + 1)
        case UInt8(ascii: "\""): return string(isKey: false)
        case UInt8(ascii: "t"): return literal("true", .true)
        case UInt8(ascii: "f"): return literal("false", .false)
        case UInt8(ascii: "n"): return literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
        default: return fail("expected a value")
        }
    }

    /// An object or an array at its opening bracket: members (a key, a colon, a value) or
    /// elements, separated by commas, up to `closing`.
    private mutating func container(_ kind: JSONTokens.Kind, closing: UInt8, depth: Int) -> Bool {
        if depth > maxDepth { return fail("nesting deeper than \(maxDepth) levels") }
        let opened = sink.open(kind, at: position)
        position += 1
        skipWhitespace()
        var count = 0
        if current == closing {
            position += 1
        } else {
            while true {
                if kind == .object {
                    guard current == UInt8(ascii: "\"") else { return fail("expected a string as object key") }
                    guard string(isKey: true) else { return false }
                    skipWhitespace()
                    guard current == UInt8(ascii: ":") else { return fail("expected ':' after object key") }
                    position += 1
                    skipWhitespace()
                }
                guard value(depth: depth) else { return false }
                count += 1
                skipWhitespace()
                if current == UInt8(ascii: ",") {
                    position += 1
                    skipWhitespace()
                } else if current == closing {
                    position += 1
                    break
                } else {
                    return fail(kind == .object ? "expected ',' or '}' in object" : "expected ',' or ']' in array")
                }
            }
        }
        if let refusal = sink.close(opened, end: position, count: count) {
            return fail(refusal, at: position - 1)
        }
        return true
    }

    private mutating func literal(_ word: StaticString, _ kind: JSONTokens.Kind) -> Bool {
        let length = word.utf8CodeUnitCount
        guard position + length <= bytes.count else {
            position = bytes.count
            return fail("invalid literal")
        }
        for index in 0..<length where bytes[position + index] != word.utf8Start[index] {
            position += index
            return fail("invalid literal, expected \(word)")
        }
        sink.scalar(kind, start: position, end: position + length, isInteger: false)
        position += length
        return true
    }

    @inline(__always) private mutating func digits() -> Int {
        let start = position
        while let byte = current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { position += 1 }
        return position - start
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    private mutating func number() -> Bool {
        let start = position
        var isInteger = true
        if current == UInt8(ascii: "-") { position += 1 }
        if current == UInt8(ascii: "0") {
            position += 1
        } else if digits() == 0 {
            return fail("expected a digit")
        }
        if current == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            if digits() == 0 { return fail("expected a digit after '.'") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            isInteger = false
            position += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
            if digits() == 0 { return fail("expected a digit in exponent") }
        }
        sink.scalar(.number, start: start, end: position, isInteger: isInteger)
        return true
    }

    /// A string at its opening quote.
    private mutating func string(isKey: Bool) -> Bool {
        position += 1
        let start = position
        var hasEscapes = false
        while true {
            // Most of a string is printable ASCII other than a quote or a backslash: passed over
            // eight bytes at a time (D20), then byte by byte, without the optional and the
            // switch below for each byte.
            while bytes.count - position >= 8, Self.isPlainText(bytes.loadUnaligned(fromByteOffset: position, as: UInt64.self)) {
                position += 8
            }
            while position < bytes.count, Self.isPlain(bytes[position]) { position += 1 }
            guard let byte = current else { return fail("unterminated string") }
            switch byte {
            case UInt8(ascii: "\""):
                if let refusal = sink.string(start: start, end: position, hasEscapes: hasEscapes, isKey: isKey) {
                    return fail(refusal, at: start - 1)
                }
                position += 1
                return true
            case UInt8(ascii: "\\"):
                hasEscapes = true
                position += 1
                guard escape() else { return false }
            case 0..<0x20:
                return fail("control character in string")
            case 0x20..<0x80:
                position += 1
            default:
                guard multibyteScalar() else { return false }
            }
        }
    }

    /// Whether `byte` is printable ASCII other than a quote or a backslash.
    @inline(__always) private static func isPlain(_ byte: UInt8) -> Bool {
        byte >= 0x20 && byte < 0x80 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\")
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

    private mutating func escape() -> Bool {
        guard let byte = current else { return fail("unterminated escape") }
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
            UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            position += 1
        case UInt8(ascii: "u"):
            position += 1
            for _ in 0..<4 {
                guard let digit = current, JSONTokens.hexDigitValue(digit) != nil else {
                    return fail("expected 4 hex digits after \\u")
                }
                position += 1
            }
        default:
            return fail("invalid escape")
        }
        return true
    }

    /// Consumes one well-formed UTF-8 sequence of 2–4 bytes (Unicode's table 3-7: no overlong
    /// forms, no surrogates, nothing above U+10FFFF).
    private mutating func multibyteScalar() -> Bool {
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
        default: return fail("invalid UTF-8")
        }
        guard position + length <= bytes.count else { return fail("invalid UTF-8") }
        for index in 1..<length {
            let continuation = bytes[position + index]
            let (low, high) = index == 1 ? (lower, upper) : (0x80, 0xBF)
            guard continuation >= low, continuation <= high else {
                position += index
                return fail("invalid UTF-8")
            }
        }
        position += length
        return true
    }
}

/// What a ``JSONScanner`` tells as it goes: each value where it lies. A sink may refuse a
/// container or a string (a reason, which ends the scan) for rules of its own above the
/// grammar's.
protocol JSONTokenSink {
    /// What ``open(_:at:)`` returns for the matching ``close(_:end:count:)``.
    associatedtype Opened

    /// An object or array opens at `position` (its bracket).
    mutating func open(_ kind: JSONTokens.Kind, at position: Int) -> Opened
    /// It closes, its bracket ending before `end`, with `count` members or elements; a reason
    /// refuses it.
    mutating func close(_ opened: Opened, end: Int, count: Int) -> String?
    /// A string's text lies between `start` and `end` (its quotes excluded); a reason refuses it.
    mutating func string(start: Int, end: Int, hasEscapes: Bool, isKey: Bool) -> String?
    /// A number or a literal lies between `start` and `end`.
    mutating func scalar(_ kind: JSONTokens.Kind, start: Int, end: Int, isInteger: Bool)
}

/// Checks that bytes are exactly one JSON document (RFC 8259) without building any objects: the
/// package's one grammar (``JSONScanner``) with nothing kept.
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
        var scanner = JSONScanner(bytes: buffer, maxDepth: maxDepth, sink: NoTokens())
        if !scanner.scanDocument(), let failure = scanner.failure { throw failure }
    }
}

/// The sink of a check that keeps nothing: the scan is the whole check.
private struct NoTokens: JSONTokenSink {
    func open(_ kind: JSONTokens.Kind, at position: Int) {}
    func close(_ opened: Void, end: Int, count: Int) -> String? { nil }
    func string(start: Int, end: Int, hasEscapes: Bool, isKey: Bool) -> String? { nil }
    func scalar(_ kind: JSONTokens.Kind, start: Int, end: Int, isInteger: Bool) {}
}
