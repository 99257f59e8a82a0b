import Foundation
import SyncClient
import Testing

/// The structural diff of two JSON values, as JSON Patch: what `syncctl --diff` prints.
@Suite struct JSONDiffTests {
    private func operations(_ old: String?, _ new: String?) throws -> [String] {
        try JSONDiff(from: old.map { Data($0.utf8) }, to: new.map { Data($0.utf8) }).operations.map {
            "\($0.op) \($0.path)" + ($0.value.map { " " + $0.jsonText } ?? "")
        }
    }

    @Test func namesEachChangedPathInKeyOrder() throws {
        #expect(
            try operations(#"{"mode":"auto","list":[1,2,3],"a/b":1,"t~":0}"#, #"{"mode":"manual","list":[1,5],"a/b":1,"t~":0,"on":true}"#)
                == ["replace /list/1 5", "remove /list/2", "replace /mode \"manual\"", "add /on true"])
        #expect(try operations(#"{"a/b":1,"t~":0}"#, #"{"a/b":2,"t~":1}"#) == ["replace /a~1b 2", "replace /t~0 1"])
        #expect(try operations(#"[1]"#, #"[1,{"x":null}]"#) == [#"add /1 {"x":null}"#])
        #expect(try operations(#"{"x":[1]}"#, #"{"x":{"0":1}}"#) == [#"replace /x {"0":1}"#])
        #expect(try operations(#"1"#, #"1.0"#) == [])
        #expect(try operations(nil, #""x""#) == [#"add  "x""#])
        #expect(try operations(#""x""#, nil) == ["remove "])
    }

    @Test func applyingTheOperationsToTheOldValueGivesTheNewOne() {
        // Every pair of a corpus built by enumeration: scalars, arrays and objects of them,
        // nested once more, with member names that need escaping.
        let scalars: [JSONValue] = [.null, .bool(true), .number(0), .number(1), .string("a"), .string("b/c")]
        var corpus = scalars
        corpus += [.array([]), .array([.number(1)]), .array([.number(1), .string("a")]), .array([.string("a"), .number(1), .null])]
        corpus += [.object([:]), .object(["x": .number(1)]), .object(["x": .number(2), "y/z": .null]), .object(["~w": .bool(true)])]
        let nested = corpus
        corpus += nested.map { .object(["x": $0, "~w": .number(1)]) } + nested.map { .array([$0, .number(1)]) }
        for old in corpus {
            for new in corpus {
                let diff = JSONDiff(from: old, to: new)
                #expect(Self.apply(diff, to: old) == new, "\(old.jsonText) → \(new.jsonText)")
            }
            #expect(JSONDiff(from: old, to: old).operations.isEmpty)
        }
    }

    /// A JSON Patch applier for add, remove and replace, enough to check the diff.
    private static func apply(_ diff: JSONDiff, to value: JSONValue) -> JSONValue? {
        var document: JSONValue? = value
        for operation in diff.operations {
            let tokens = operation.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map {
                $0.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            }
            document = set(operation.op == "remove" ? nil : operation.value, at: Array(tokens), in: document)
        }
        return document
    }

    private static func set(_ value: JSONValue?, at tokens: [String], in document: JSONValue?) -> JSONValue? {
        guard let token = tokens.first else { return value }
        switch document {
        case .object(var members):
            members[token] = set(value, at: Array(tokens.dropFirst()), in: members[token])
            return .object(members)
        case .array(var elements):
            let index = Int(token)!
            if tokens.count == 1, value == nil {
                elements.remove(at: index)
            } else if index == elements.count {
                elements.append(set(value, at: Array(tokens.dropFirst()), in: nil)!)
            } else {
                elements[index] = set(value, at: Array(tokens.dropFirst()), in: elements[index])!
            }
            return .array(elements)
        default:
            return document
        }
    }
}
