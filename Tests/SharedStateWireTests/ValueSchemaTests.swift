import Foundation
import SharedStateWire
import Testing

/// Schemas as issue 57 has them: every keyword of the vocabulary checked, any other refused by
/// name, and a violation named by where it is, its rule and its limit.
@Suite struct ValueSchemaTests {
    private func json(_ text: String) throws -> JSONValue {
        try JSONValue(json: Data(text.utf8))
    }

    private func schema(_ text: String) throws -> ValueSchema {
        try ValueSchema(document: json(text))
    }

    /// The violation of `value` against `schema`, as said of key `k`; nil when it satisfies it.
    private func check(_ schemaText: String, _ valueText: String) throws -> String? {
        try schema(schemaText).firstViolation(of: json(valueText))?.said(of: "k").description
    }

    @Test func theIssuesExampleNamesTheKeyThePointerTheRuleAndItsLimit() throws {
        let thermostat = try schema(#"{"type":"object","properties":{"target":{"type":"number","maximum":30}}}"#)
        let violation = try #require(thermostat.firstViolation(of: json(#"{"target":40}"#)))
        #expect(violation.said(of: "climate/living").description == "climate/living: /target is 40, above the maximum 30")
        #expect(violation.pointer == "/target" && violation.rule == "maximum" && violation.limit == "30")
        #expect(violation.found == .number(40))
        #expect(thermostat.firstViolation(of: try json(#"{"target":21.5}"#)) == nil)
    }

    @Test func aFeaturesDecodeFailureReadsAsTheIssueWantsIt() throws {
        let fan = #"{"type":"object","required":["on","speed"],"properties":{"on":{"type":"boolean"},"speed":{"type":"integer"}}}"#
        #expect(try check(fan, #"{"on":"yes","speed":1}"#) == #"k: /on is "yes", a string, not a boolean"#)
        #expect(try check(fan, #"{"on":true}"#) == "k: /speed is missing")
        #expect(try check(fan, #"{"on":true,"speed":1.5}"#) == "k: /speed is 1.5, a number, not an integer")
        #expect(try check(fan, #"{"on":true,"speed":2}"#) == nil)
    }

    @Test func everyKeywordRefusesWhatItShouldAndAcceptsTheRest() throws {
        // (schema, a value it accepts, a value it refuses, the refusal as said)
        let cases: [(String, String, String, String)] = [
            (#"{"type":["string","null"]}"#, "null", "1", "k: the value is 1, an integer, not a string or null"),
            (#"{"enum":["low","high"]}"#, #""low""#, #""mid""#, #"k: the value is "mid", not one of "low", "high""#),
            (#"{"const":{"a":[1,2]}}"#, #"{"a":[1.0,2]}"#, #"{"a":[2,1]}"#, #"k: the value is {"a":[2,1]}, not {"a":[1,2]}"#),
            (#"{"minimum":5}"#, "5", "4.5", "k: the value is 4.5, below the minimum 5"),
            (#"{"exclusiveMinimum":0}"#, "0.1", "0", "k: the value is 0, not above 0"),
            (#"{"exclusiveMaximum":10}"#, "9.9", "10", "k: the value is 10, not below 10"),
            (#"{"multipleOf":0.1}"#, "0.3", "0.35", "k: the value is 0.35, not a multiple of 0.1"),
            // A large number is no multiple by rounding: 2^53 - 1 is not a multiple of 3 (found by
            // the agreement test with Python's jsonschema).
            (#"{"multipleOf":3}"#, "9007199254740990", "9007199254740991", "k: the value is 9007199254740991, not a multiple of 3"),
            (#"{"minLength":2}"#, #""é1""#, #""é""#, #"k: the value is "é", shorter than 2 characters"#),
            (#"{"maxLength":3}"#, #""abc""#, #""abcd""#, #"k: the value is "abcd", longer than 3 characters"#),
            (#"{"pattern":"^[a-z]+$"}"#, #""hall""#, #""Hall""#, #"k: the value is "Hall", does not match the pattern "^[a-z]+$""#),
            (#"{"minItems":1}"#, "[0]", "[]", "k: the value is [], has fewer than 1 items"),
            (#"{"maxItems":1}"#, "[0]", "[0,1]", "k: the value is [0,1], has more than 1 items"),
            (#"{"uniqueItems":true}"#, "[1,2]", "[1,2,1.0]", "k: the value is [1,2,1], has item 2 equal to item 0"),
            (#"{"minProperties":1}"#, #"{"a":1}"#, "{}", "k: the value is {}, has fewer than 1 members"),
            (#"{"maxProperties":1}"#, #"{"a":1}"#, #"{"a":1,"b":2}"#, #"k: the value is {"a":1,"b":2}, has more than 1 members"#),
            (#"{"items":{"type":"integer"}}"#, "[1,2]", "[1,\"2\"]", #"k: /1 is "2", a string, not an integer"#),
            (
                #"{"prefixItems":[{"type":"string"}],"items":{"type":"number"}}"#, #"["a",1,2]"#, #"["a",1,"b"]"#,
                #"k: /2 is "b", a string, not a number"#
            ),
            (
                #"{"properties":{"a":{}},"additionalProperties":false}"#, #"{"a":1}"#, #"{"a":1,"b":2}"#,
                "k: /b is 2, not a member the schema names"
            ),
            (
                #"{"additionalProperties":{"type":"boolean"}}"#, #"{"x":true}"#, #"{"x/y~":0}"#,
                "k: /x~1y~0 is 0, an integer, not a boolean"
            ),
            ("false", "(none)", "1", "k: the value is 1, no value is allowed here"),
        ]
        for (schemaText, accepted, refused, said) in cases {
            if accepted != "(none)" { #expect(try check(schemaText, accepted) == nil, "\(schemaText) refused \(accepted)") }
            #expect(try check(schemaText, refused) == said, "\(schemaText) on \(refused)")
        }
        #expect(try check("true", #"{"anything":[null]}"#) == nil)
    }

    @Test func annotationsAreKeptAndNeverChecked() throws {
        let documented = try schema(
            #"{"title":"Fan","description":"The hall fan","$comment":"issue 57","default":{"on":false},"type":"object"}"#)
        #expect(documented.title == "Fan" && documented.description == "The hall fan")
        #expect(documented.defaultValue == .object(["on": .bool(false)]))
        #expect(documented.firstViolation(of: .object([:])) == nil)
    }

    @Test func aKeywordOutsideTheVocabularyIsRefusedByNameAndPlace() throws {
        #expect(throws: SchemaError.self) { try schema(#"{"type":"object","format":"date"}"#) }
        let error = #expect(throws: SchemaError.self) {
            try schema(#"{"properties":{"when":{"type":"string","format":"date-time"}}}"#)
        }
        #expect(error?.description == #"/properties/when: the keyword "format" is not one syncd checks"#)
        for keyword in ["$ref", "allOf", "anyOf", "oneOf", "not", "if", "patternProperties", "dependentRequired"] {
            #expect(throws: SchemaError.self, "\(keyword) was taken") { try schema(#"{"\#(keyword)":{}}"#) }
        }
    }

    @Test func aKeywordGivenWhatItDoesNotTakeIsRefused() throws {
        let refused = [
            #"{"type":"float"}"#, #"{"type":[]}"#, #"{"minimum":"5"}"#, #"{"minLength":-1}"#, #"{"maxItems":1.5}"#,
            #"{"multipleOf":0}"#, #"{"required":"on"}"#, #"{"pattern":"(("}"#, #"{"enum":[]}"#, #"{"uniqueItems":1}"#,
            #"{"properties":{"a":3}}"#, #"{"minItems":3,"maxItems":2}"#, #"{"title":5}"#, "[]", "3",
        ]
        for document in refused {
            #expect(throws: SchemaError.self, "\(document) was taken") { try schema(document) }
        }
        let error = #expect(throws: SchemaError.self) { try schema(#"{"items":{"minimum":"0"}}"#) }
        #expect(error?.description == "/items/minimum: minimum takes a number")
    }

    @Test func theFirstViolationIsFoundInDocumentOrderOfTheChecks() throws {
        let nested = #"""
            {"type":"object","required":["rooms"],"properties":{"rooms":{"type":"array","items":
            {"type":"object","required":["name"],"properties":{"name":{"minLength":1},"target":{"maximum":30}}}}}}
            """#
        #expect(
            try check(nested, #"{"rooms":[{"name":"hall","target":20},{"name":"","target":40}]}"#)
                == #"k: /rooms/1/name is "", shorter than 1 characters"#)
        #expect(try check(nested, #"{"rooms":[{"target":20}]}"#) == "k: /rooms/0/name is missing")
        #expect(try check(nested, #"{"rooms":[{"name":"a","target":31}]}"#) == "k: /rooms/0/target is 31, above the maximum 30")
    }
}
