import Foundation
import SharedStateWire
import Testing

@Suite struct KeyRulesTests {
    @Test(arguments: ["a", "counter/value", "session/user", "a/b/c/d", "héllo/wörld", "with space", "x-1_2.3:4"])
    func acceptsValidKeys(_ key: String) throws {
        try KeyRules.validateKey(key)
    }

    @Test(arguments: [
        ("", "cannot be empty"),
        ("/a", "cannot start with '/'"),
        ("a/", "cannot end with '/'"),
        ("a//b", "cannot be empty"),
        ("a\nb", "control character U+000A"),
        ("tab\there", "control character U+0009"),
        ("del\u{7F}", "control character U+007F"),
    ])
    func refusesMalformedKeys(_ key: String, _ expectedReason: String) {
        #expect {
            try KeyRules.validateKey(key)
        } throws: { error in
            let error = error as! SharedStateError
            return error.code == .invalidArgument && error.message.contains(expectedReason)
        }
    }

    @Test func messagesQuoteKeysAsJSONStrings() throws {
        #expect(KeyRules.quoted("door/1") == #""door/1""#)
        #expect(KeyRules.quoted("a\nb\t\r\u{8}\u{C}") == #""a\nb\t\r\b\f""#)
        #expect(KeyRules.quoted("bell\u{7}del\u{7F}c1\u{85}") == #""bell\u0007del\u007fc1\u0085""#)
        #expect(KeyRules.quoted(#"say "hi" \ bye"#) == #""say \"hi\" \\ bye""#)
        #expect(KeyRules.quoted("héllo/日本") == #""héllo/日本""#)
        // What it prints reads back as the key, for JSON.
        let key = "a\u{0}\"b\\\u{1F}\u{9F}é"
        let decoded = try JSONSerialization.jsonObject(with: Data(KeyRules.quoted(key).utf8), options: .fragmentsAllowed)
        #expect(decoded as? String == key)
        #expect {
            try KeyRules.validateKey("a\u{7}b")
        } throws: { error in
            (error as! SharedStateError).message == #"invalid key "a\u0007b": it contains the control character U+0007"#
        }
    }

    @Test func refusesKeysLongerThan512Bytes() throws {
        try KeyRules.validateKey(String(repeating: "k", count: 512))
        #expect {
            try KeyRules.validateKey(String(repeating: "k", count: 513))
        } throws: { error in
            (error as! SharedStateError).code == .tooLarge
        }
        // Bytes, not characters: 171 three-byte characters are 513 bytes.
        #expect(throws: SharedStateError.self) { try KeyRules.validateKey(String(repeating: "€", count: 171)) }
    }

    @Test func keysMustBeComposedSoEqualLookingKeysAreEqualBytes() throws {
        try KeyRules.validateKey("caf\u{E9}")
        #expect {
            try KeyRules.validateKey("cafe\u{301}")
        } throws: { error in
            (error as! SharedStateError).message.contains("normalization form C")
        }
    }

    @Test func everyShortKeyIsJudgedAsTheRulesSay() {
        // Every key of up to 4 of these pieces is judged against the rules restated.
        let pieces = ["a", "/", " ", "\u{1F}", "\u{7F}", "é", "~"]
        var limits = Limits()
        limits.maxKeyBytes = 3
        var keys = [""]
        for _ in 0..<4 { keys += keys.flatMap { key in pieces.map { key + $0 } }.filter { $0.unicodeScalars.count > 0 } }
        for key in Set(keys) {
            let bytes = Array(key.utf8)
            let isValid =
                !bytes.isEmpty && bytes.count <= limits.maxKeyBytes && bytes.first != UInt8(ascii: "/")
                && bytes.last != UInt8(ascii: "/") && !key.contains("//")
                && !key.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
            let accepted = (try? KeyRules.validateKey(key, limits: limits)) != nil
            #expect(accepted == isValid, "\(key.debugDescription)")
        }
    }

    @Test(arguments: ["", "session", "session/", "a/b/"])
    func acceptsValidPrefixes(_ prefix: String) throws {
        try KeyRules.validatePrefix(prefix)
    }

    @Test(arguments: ["/", "/a", "a//", "a\u{0}"])
    func refusesMalformedPrefixes(_ prefix: String) {
        #expect(throws: SharedStateError.self) { try KeyRules.validatePrefix(prefix) }
    }

    @Test(arguments: [
        ("session/user", "session/", true),
        ("session/user", "session", true),
        ("sessions/x", "session", true),
        ("sessions/x", "session/", false),
        ("anything", "", true),
        ("a", "ab", false),
        ("cat", "cat", true),
        ("ca", "cat", false),
        ("café/x", "caf", true),
        ("café/x", "café/", true),
        ("cafe/x", "café", false),
    ])
    func prefixesMatchLeadingBytes(_ key: String, _ prefix: String, _ matches: Bool) {
        #expect(KeyRules.key(key, hasPrefix: prefix) == matches)
    }
}
