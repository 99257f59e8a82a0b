import Foundation

/// A JSON document split into tokens in one validating pass (``JSONScanner``, the grammar
/// ``JSONValidator`` checks syncd's values with), for the client's in-place decoder: each value
/// is where it lies in the bytes, and a container knows where the value after it starts, so a
/// decoder finds a member without building anything for the ones it skips.
///
/// It refuses (nil) what is not JSON, and what the in-place decoder leaves to `JSONDecoder`: a
/// key twice in one object (after escapes), an escaped UTF-16 surrogate without its other half in
/// a key, nesting deeper than 512.
package struct JSONTokens {
    package enum Kind: UInt8 {
        case object, array, string, number, `true`, `false`, null
    }

    package struct Token {
        package var kind: Kind
        /// A string with a backslash escape between its quotes.
        package var hasEscapes = false
        /// A number without a fraction or an exponent.
        package var isInteger = false
        /// The first byte: of a string, the one after its opening quote.
        package var start: Int32
        /// One past the last byte: of a string, its closing quote.
        package var end: Int32 = 0
        /// The token after this value and everything inside it.
        package var next: Int32 = 0
        /// Members of an object, elements of an array.
        package var count: Int32 = 0
    }

    /// The document's bytes: a copy of the value's, made once, so that nothing a decoding hands
    /// out (a `Decoder` a type keeps, say) can outlive them.
    package let bytes: [UInt8]
    /// The values in document order: an object's members as a key token then its value's tokens.
    package let tokens: [Token]

    /// The deepest nesting accepted, as JSONDecoder's.
    package static let maximumDepth = 512

    package init?(_ data: Data) {
        guard data.count < Int32.max else { return nil }
        let bytes = [UInt8](data)
        let scanned = bytes.withUnsafeBytes { buffer -> [Token]? in
            var scanner = JSONScanner(bytes: buffer, maxDepth: Self.maximumDepth, sink: Recorder(bytes: buffer))
            return scanner.scanDocument() ? scanner.sink.tokens : nil
        }
        guard let scanned else { return nil }
        self.bytes = bytes
        self.tokens = scanned
    }
}

extension JSONTokens {
    /// The tokens of the document in `buffer`, scanned where it lies (nothing copied); nil for what
    /// ``init(_:)`` refuses, except that with `allowingRepeatedKeys` a key twice in one object is
    /// kept as it comes (each occurrence a member of its own).
    package static func tokens(in buffer: UnsafeRawBufferPointer, allowingRepeatedKeys: Bool = false) -> [Token]? {
        guard buffer.count < Int32.max else { return nil }
        var recorder = Recorder(bytes: buffer)
        recorder.checksDistinctKeys = !allowingRepeatedKeys
        var scanner = JSONScanner(bytes: buffer, maxDepth: maximumDepth, sink: recorder)
        return scanner.scanDocument() ? scanner.sink.tokens : nil
    }

    /// The sink that keeps every token, and refuses what the in-place decoder leaves to
    /// `JSONDecoder`.
    private struct Recorder: JSONTokenSink {
        let bytes: UnsafeRawBufferPointer
        var checksDistinctKeys = true
        var tokens: [Token] = []

        init(bytes: UnsafeRawBufferPointer) {
            self.bytes = bytes
            tokens.reserveCapacity(min(bytes.count / 4 + 4, 4096))
        }

        mutating func open(_ kind: Kind, at position: Int) -> Int {
            tokens.append(Token(kind: kind, start: Int32(position)))
            return tokens.count - 1
        }

        mutating func close(_ index: Int, end: Int, count: Int) -> String? {
            tokens[index].end = Int32(end)
            tokens[index].next = Int32(tokens.count)
            tokens[index].count = Int32(count)
            return tokens[index].kind != .object || !checksDistinctKeys || hasDistinctKeys(object: index)
                ? nil : "a key twice in one object"
        }

        mutating func string(start: Int, end: Int, hasEscapes: Bool, isKey: Bool) -> String? {
            tokens.append(
                Token(kind: .string, hasEscapes: hasEscapes, start: Int32(start), end: Int32(end), next: Int32(tokens.count + 1)))
            guard isKey, hasEscapes, JSONTokens.unescaped(keyBytes(tokens.count - 1)) == nil else { return nil }
            return "an escaped surrogate without its other half in a key"
        }

        mutating func scalar(_ kind: Kind, start: Int, end: Int, isInteger: Bool) {
            tokens.append(Token(kind: kind, isInteger: isInteger, start: Int32(start), end: Int32(end), next: Int32(tokens.count + 1)))
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
            UnsafeBufferPointer(rebasing: bytes.assumingMemoryBound(to: UInt8.self)[Int(tokens[token].start)..<Int(tokens[token].end)])
        }

        private func isSameKey(_ first: Int, _ second: Int) -> Bool {
            let a = keyBytes(first), b = keyBytes(second)
            if tokens[first].hasEscapes || tokens[second].hasEscapes {
                return JSONTokens.unescaped(a) == JSONTokens.unescaped(b)
            }
            return a.count == b.count && (a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
        }
    }

    /// Resolves the escapes of a string's text (the scanner checked their syntax); nil for an
    /// escaped UTF-16 surrogate without its other half.
    package static func unescaped(_ text: UnsafeBufferPointer<UInt8>) -> String? {
        var result: [UInt8] = []
        result.reserveCapacity(text.count)
        var position = 0
        while position < text.count {
            let byte = text[position]
            guard byte == UInt8(ascii: "\\") else {
                result.append(byte)
                position += 1
                continue
            }
            let escaped = text[position + 1]
            position += 2
            switch escaped {
            case UInt8(ascii: "b"): result.append(0x08)
            case UInt8(ascii: "f"): result.append(0x0C)
            case UInt8(ascii: "n"): result.append(0x0A)
            case UInt8(ascii: "r"): result.append(0x0D)
            case UInt8(ascii: "t"): result.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = utf16Unit(text, at: position)
                position += 4
                if (0xD800..<0xDC00).contains(scalar) {
                    guard position + 6 <= text.count, text[position] == UInt8(ascii: "\\"), text[position + 1] == UInt8(ascii: "u")
                    else { return nil }
                    let low = utf16Unit(text, at: position + 2)
                    guard (0xDC00..<0xE000).contains(low) else { return nil }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    position += 6
                } else if (0xDC00..<0xE000).contains(scalar) {
                    return nil
                }
                guard let unicodeScalar = Unicode.Scalar(scalar) else { return nil }
                result.append(contentsOf: UTF8.encode(unicodeScalar)!)
            default: result.append(escaped)  // `"`, `\` and `/` stand for themselves
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    private static func utf16Unit(_ text: UnsafeBufferPointer<UInt8>, at position: Int) -> UInt32 {
        (0..<4).reduce(0) { unit, offset in unit << 4 | UInt32(hexDigitValue(text[position + offset])!) }
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
