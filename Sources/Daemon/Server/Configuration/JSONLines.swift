/// The line each value of a JSON text starts on, found by its coding path, so that an error in a
/// file syncd reads (the configuration, the access policy) can name its line.
///
/// Build it from text a JSON parser has accepted: it follows the structure without checking it,
/// and stops quietly where the text is not what it expects.
package struct JSONLines {
    private var lines: [[String]: Int] = [:]

    package init(_ text: String) {
        var scanner = Scanner(bytes: Array(text.utf8))
        scanner.value(at: [])
        lines = scanner.lines
    }

    /// The line of the value at `path`, or of the nearest value enclosing it that has one; a
    /// member of an object is on the line of its name.
    package func line(of path: [any CodingKey]) -> Int? {
        var components = path.map { $0.intValue.map(String.init) ?? $0.stringValue }
        while true {
            if let line = lines[components] { return line }
            if components.isEmpty { return nil }
            components.removeLast()
        }
    }

    /// A coding key made by hand, to ask for the line of a place in the text.
    package struct Key: CodingKey {
        package var stringValue: String
        package var intValue: Int?
        package init(_ name: String) { (stringValue, intValue) = (name, nil) }
        package init(_ index: Int) { (stringValue, intValue) = (String(index), index) }
        package init?(stringValue: String) { self.init(stringValue) }
        package init?(intValue: Int) { self.init(intValue) }
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0
        var line = 1
        var lines: [[String]: Int] = [:]

        init(bytes: [UInt8]) {
            self.bytes = bytes
        }

        private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func value(at path: [String]) {
            skipWhitespace()
            if lines[path] == nil { lines[path] = line }
            switch current {
            case UInt8(ascii: "{"): object(at: path)
            case UInt8(ascii: "["): array(at: path)
            case UInt8(ascii: "\""): _ = string()
            case nil: return
            default:
                while let byte = current, !Self.endsScalar(byte) { index += 1 }
            }
        }

        private mutating func object(at path: [String]) {
            index += 1
            while true {
                skipWhitespace()
                guard current == UInt8(ascii: "\"") else {
                    if current == UInt8(ascii: "}") { index += 1 }
                    return
                }
                let nameLine = line
                let name = string()
                lines[path + [name]] = nameLine
                skipWhitespace()
                guard current == UInt8(ascii: ":") else { return }
                index += 1
                value(at: path + [name])
                skipWhitespace()
                guard current == UInt8(ascii: ",") else {
                    if current == UInt8(ascii: "}") { index += 1 }
                    return
                }
                index += 1
            }
        }

        private mutating func array(at path: [String]) {
            index += 1
            skipWhitespace()
            if current == UInt8(ascii: "]") {
                index += 1
                return
            }
            var position = 0
            while current != nil {
                value(at: path + [String(position)])
                skipWhitespace()
                guard current == UInt8(ascii: ",") else {
                    if current == UInt8(ascii: "]") { index += 1 }
                    return
                }
                index += 1
                position += 1
            }
        }

        /// Reads a string and returns its contents, escapes resolved as far as names need.
        private mutating func string() -> String {
            index += 1
            var contents: [UInt8] = []
            while let byte = current, byte != UInt8(ascii: "\"") {
                index += 1
                guard byte == UInt8(ascii: "\\"), let escaped = current else {
                    contents.append(byte)
                    continue
                }
                index += 1
                switch escaped {
                case UInt8(ascii: "n"): contents.append(UInt8(ascii: "\n"))
                case UInt8(ascii: "t"): contents.append(UInt8(ascii: "\t"))
                case UInt8(ascii: "u"):
                    let digits = bytes[index..<min(index + 4, bytes.count)]
                    index += digits.count
                    let scalar = UInt32(String(decoding: digits, as: UTF8.self), radix: 16).flatMap(Unicode.Scalar.init)
                    contents.append(contentsOf: String(scalar ?? "?").utf8)
                default: contents.append(escaped)
                }
            }
            index += 1
            return String(decoding: contents, as: UTF8.self)
        }

        private mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
                if byte == 0x0A { line += 1 }
                index += 1
            }
        }

        private static func endsScalar(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: ",") || byte == UInt8(ascii: "]") || byte == UInt8(ascii: "}") || byte == 0x20 || byte == 0x09
                || byte == 0x0A || byte == 0x0D
        }
    }
}
