import Testing

@testable import SharedStateWire

/// A write's cause is refused when it holds a control character or is too long, with an error
/// that says which.
@Suite struct RequestRulesTests {
    @Test func aCauseIsRefusedExactlyWhenAScalarIsAControlCharacter() {
        // Every scalar, against Unicode's own category: the check compares values instead.
        for value in UInt32(0)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let isControl = scalar.properties.generalCategory == .control
            let cause = "before" + String(Character(scalar)) + "after"
            let refused: Bool
            do {
                try RequestRules.validateCause(cause)
                refused = false
            } catch {
                refused = true
                #expect(error.code == .invalidArgument)
                #expect(error.message == "the cause contains a control character")
            }
            if refused != isControl { Issue.record("U+\(String(value, radix: 16, uppercase: true)): refused \(refused)") }
        }
    }

    @Test func aCauseOverTheLimitIsRefusedWithItsSize() {
        let long = String(repeating: "é", count: RequestRules.maxCauseBytes / 2 + 1)
        #expect(throws: SharedStateError(.tooLarge, "the cause has \(long.utf8.count) bytes; the limit is \(RequestRules.maxCauseBytes)")) {
            try RequestRules.validateCause(long)
        }
        #expect(throws: Never.self) { try RequestRules.validateCause(String(repeating: "a", count: RequestRules.maxCauseBytes)) }
    }
}
