import SharedStateWire
import Testing

@Suite struct JSONValidatorTests {
    @Test(arguments: [
        "0", "-0", "1.5e10", "-12.25E-3", "true", "false", "null", #""""#, #""h\u00e9\n\"x\"""#, "[]", "{}",
        " [1, 2, [3, {\"a\": null}]] ", #"{"a":{"b":{"c":[true,false]}}}"#, "\"héllo wörld ✓ 😀\"", "\n\t 42 \r\n",
    ])
    func acceptsValidDocuments(_ document: String) throws {
        try JSONValidator.validate(Array(document.utf8))
    }

    @Test(arguments: [
        ("", "empty document"),
        ("   ", "empty document"),
        ("{x", "expected a string as object key"),
        ("[1,]", "expected a value"),
        ("[1 2]", "expected ',' or ']'"),
        (#"{"a" 1}"#, "expected ':'"),
        ("01", "unexpected data after"),
        ("1.", "expected a digit after '.'"),
        ("1e", "expected a digit in exponent"),
        ("-", "expected a digit"),
        ("tru", "invalid literal"),
        ("nul1", "invalid literal"),
        ("\"abc", "unterminated string"),
        ("\"a\u{1}b\"", "control character in string"),
        (#""\x""#, "invalid escape"),
        (#""\u12G4""#, "expected 4 hex digits"),
        ("1 2", "unexpected data after"),
        ("{} {}", "unexpected data after"),
        ("'single'", "expected a value"),
        ("NaN", "expected a value"),
    ])
    func refusesInvalidDocuments(_ document: String, _ reason: String) {
        #expect {
            try JSONValidator.validate(Array(document.utf8))
        } throws: { error in
            (error as! JSONValidator.Failure).description.contains(reason)
        }
    }

    @Test(arguments: [
        [0x22, 0xC3, 0x22] as [UInt8],  // truncated two-byte sequence
        [0x22, 0xC0, 0xAF, 0x22],  // overlong '/'
        [0x22, 0xED, 0xA0, 0x80, 0x22],  // UTF-16 surrogate
        [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],  // above U+10FFFF
        [0x22, 0xFF, 0x22],
        [0xEF, 0xBB, 0xBF, 0x31],  // byte order mark before the value
    ])
    func refusesInvalidUTF8(_ bytes: [UInt8]) {
        #expect(throws: JSONValidator.Failure.self) { try JSONValidator.validate(bytes) }
    }

    @Test func everyByteInsideALongStringIsJudgedWhereItIs() {
        // Runs of plain ASCII are passed over eight bytes at a time, then byte by byte: each byte
        // that ends one must still be judged, at its own offset, in every lane of a word.
        var misjudged: [String] = []
        for before in 24..<40 {
            let run = Array(repeating: UInt8(ascii: "x"), count: before)
            for byte in UInt8.min...UInt8.max {
                let document = [UInt8(ascii: "\"")] + run + [byte] + run + [UInt8(ascii: "\"")]
                let offset = 1 + run.count
                do {
                    try JSONValidator.validate(document)
                    if !(byte >= 0x20 && byte < 0x80 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\")) {
                        misjudged.append("byte \(byte) after \(before) accepted")
                    }
                } catch {
                    let expected: Bool
                    switch byte {
                    case 0..<0x20: expected = error.reason == "control character in string" && error.offset == offset
                    case UInt8(ascii: "\""): expected = error.reason == "unexpected data after the JSON value" && error.offset == offset + 1
                    case UInt8(ascii: "\\"): expected = error.reason == "invalid escape" && error.offset == offset + 1
                    case 0x80...: expected = error.reason == "invalid UTF-8" && (offset...offset + 1).contains(error.offset)
                    default: expected = false
                    }
                    if !expected { misjudged.append("byte \(byte) after \(before): \(error)") }
                }
            }
        }
        #expect(misjudged.isEmpty)
    }

    @Test func limitsNestingDepth() throws {
        let depth = 100
        try JSONValidator.validate(Array((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8))
        let tooDeep = String(repeating: "[", count: depth + 1) + String(repeating: "]", count: depth + 1)
        #expect {
            try JSONValidator.validate(Array(tooDeep.utf8), maxDepth: depth)
        } throws: { error in
            (error as! JSONValidator.Failure).reason.contains("nesting deeper than 100")
        }
        // Far deeper input fails at the limit instead of exhausting the stack.
        let hostile = String(repeating: "[", count: 1_000_000)
        #expect(throws: JSONValidator.Failure.self) { try JSONValidator.validate(Array(hostile.utf8)) }
    }

    @Test func valueRulesNameTheSizeLimit() {
        var limits = Limits()
        limits.maxValueBytes = 10
        #expect {
            try ValueRules.validateValue(Array("\"0123456789\"".utf8), limits: limits)
        } throws: { error in
            let error = error as! SharedStateError
            return error.code == .tooLarge && error.message.contains("limit of 10 bytes")
        }
    }
}
