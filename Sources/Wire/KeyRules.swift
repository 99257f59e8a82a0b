import Foundation

#if canImport(Glibc)
    import Glibc

    /// The rules for keys and watch prefixes, shared by syncd and the client.
    ///
    /// A key is 1–512 bytes of UTF-8 made of `/`-separated, non-empty segments of printable characters:
    /// `counter/value` and `session/user` are keys; `/a`, `a/`, `a//b` and `a\nb` are not.
    ///
    /// A prefix selects keys by their leading bytes, like etcd's: `session/` selects every key under
    /// the `session` segment, while `session` also selects `sessions/x`. End a prefix with `/` to match
    /// whole segments. The empty prefix selects every key.
    public enum KeyRules {
        /// Checks that `key` is a valid key.
        ///
        /// - Throws: ``SharedStateError`` with code `invalidArgument` or `tooLarge`, naming the problem.
        public static func validateKey(_ key: String, limits: Limits = .default) throws(SharedStateError) {
            if key.isEmpty {
                throw SharedStateError(.invalidArgument, "invalid key: a key cannot be empty")
            }
            try validateText(key, what: "key", limits: limits)
            if SchemaKeys.isReserved(key) { return try validateReservedKey(key, limits: limits) }
            if key.utf8.first == slash {
                throw SharedStateError(.invalidArgument, "invalid key \(quoted(key)): a key cannot start with '/'")
            }
            if key.utf8.last == slash {
                throw SharedStateError(.invalidArgument, "invalid key \(quoted(key)): a key cannot end with '/'")
            }
            if hasEmptySegment(key) {
                throw SharedStateError(.invalidArgument, "invalid key \(quoted(key)): segments between '/' cannot be empty")
            }
            try requireNormalizationFormC(key, what: "key")
        }

        /// Keys starting with `$` are syncd's: `$schemas/PREFIX` holds the schema of a prefix (see
        /// ``SchemaKeys``), and nothing else is one.
        private static func validateReservedKey(_ key: String, limits: Limits) throws(SharedStateError) {
            guard let prefix = SchemaKeys.prefix(ofKey: key) else {
                throw SharedStateError(
                    .invalidArgument,
                    "invalid key \(quoted(key)): keys starting with '$' are syncd's ('\(SchemaKeys.keyPrefix)PREFIX' holds the schema of PREFIX)"
                )
            }
            do {
                try SchemaKeys.validatePrefix(prefix, limits: limits)
            } catch {
                throw SharedStateError(error.code, "invalid schema key \(quoted(key)): \(error.message)")
            }
        }

        /// Checks that `prefix` is a valid prefix: empty, or a key, or a key followed by `/`.
        ///
        /// - Throws: ``SharedStateError`` with code `invalidArgument` or `tooLarge`, naming the problem.
        public static func validatePrefix(_ prefix: String, limits: Limits = .default) throws(SharedStateError) {
            if prefix.isEmpty { return }
            try validateText(prefix, what: "prefix", limits: limits)
            if prefix.utf8.first == slash {
                throw SharedStateError(.invalidArgument, "invalid prefix \(quoted(prefix)): a prefix cannot start with '/'")
            }
            if hasEmptySegment(prefix) {
                throw SharedStateError(.invalidArgument, "invalid prefix \(quoted(prefix)): segments between '/' cannot be empty")
            }
            try requireNormalizationFormC(prefix, what: "prefix")
        }

        /// Whether `key` is selected by `prefix`.
        @inlinable
        public static func key(_ key: String, hasPrefix prefix: String) -> Bool {
            if prefix.isEmpty { return true }
            // Compared as bytes in place: the generic `starts(with:)` of two UTF-8 views walks them a
            // byte at a time, and syncd asks this per change and watch.
            var key = key
            var prefix = prefix
            return key.withUTF8 { key in
                prefix.withUTF8 { prefix in
                    prefix.count <= key.count && memcmp(key.baseAddress!, prefix.baseAddress!, prefix.count) == 0
                }
            }
        }

        private static let slash = UInt8(ascii: "/")

        private static func validateText(_ text: String, what: String, limits: Limits) throws(SharedStateError) {
            let length = text.utf8.count
            if length > limits.maxKeyBytes {
                throw SharedStateError(
                    .tooLarge,
                    "invalid \(what): \(length) bytes is longer than the limit of \(limits.maxKeyBytes) bytes"
                )
            }
            for scalar in text.unicodeScalars where isControl(scalar) {
                throw SharedStateError(
                    .invalidArgument,
                    "invalid \(what) \(quoted(text)): it contains the control character U+\(hex(scalar.value))"
                )
            }
        }

        /// Keys are compared byte for byte (SQLite, prefixes, ordering) but Swift strings compare by
        /// canonical equivalence: two spellings of "é" would be one key in memory and two on disk. Only
        /// the composed form (NFC) is accepted, so equal-looking keys are equal bytes.
        private static func requireNormalizationFormC(_ text: String, what: String) throws(SharedStateError) {
            if text.utf8.allSatisfy({ $0 < 0x80 }) { return }
            if !text.utf8.elementsEqual(text.precomposedStringWithCanonicalMapping.utf8) {
                throw SharedStateError(
                    .invalidArgument,
                    "invalid \(what) \(quoted(text)): it must be in Unicode normalization form C (composed characters)"
                )
            }
        }

        private static func hasEmptySegment(_ text: String) -> Bool {
            var previousWasSlash = false
            for byte in text.utf8 {
                let isSlash = byte == slash
                if isSlash && previousWasSlash { return true }
                previousWasSlash = isSlash
            }
            return false
        }

        private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
            scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
        }

        private static func hex(_ value: UInt32) -> String {
            let digits = String(value, radix: 16, uppercase: true)
            return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        }

        /// `text` as a JSON string, safe to print and to paste into a program: in quotes, with `"`,
        /// `\` and control characters escaped as JSON escapes them (`\n`, `\u0007`, ...). Every
        /// message that names a key or a prefix quotes it so.
        public static func quoted(_ text: String) -> String {
            var result = "\""
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": result += "\\\""
                case "\\": result += "\\\\"
                case "\n": result += "\\n"
                case "\r": result += "\\r"
                case "\t": result += "\\t"
                case "\u{8}": result += "\\b"
                case "\u{C}": result += "\\f"
                case _ where isControl(scalar): result += "\\u" + hex(scalar.value).lowercased()
                default: result.unicodeScalars.append(scalar)
                }
            }
            return result + "\""
        }
    }

#elseif canImport(Darwin)
    import Darwin
#endif

/// The one order of keys in SharedState: by their UTF-8 bytes, as SQLite's `BINARY` collation has
/// them. Lists and snapshots return keys in it, and syncd keeps its entries in it.
public enum KeyByteOrder {
    /// Whether `key` sorts before `other`.
    @inlinable
    public static func precedes(_ key: String, _ other: String) -> Bool {
        var key = key
        var other = other
        return key.withUTF8 { key in other.withUTF8 { other in compare(key, other) < 0 } }
    }

    /// The bytes of `a` against those of `b`: negative, zero or positive.
    @inlinable
    public static func compare(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        let common = min(a.count, b.count)
        if common > 0, let left = a.baseAddress, let right = b.baseAddress {
            let result = memcmp(left, right, common)
            if result != 0 { return Int(result) }
        }
        return a.count - b.count
    }
}
