import Foundation

/// What changed inside a JSON value, as RFC 6902 JSON Patch operations: the structural diff
/// `syncctl watch --diff` and `history --diff` print.
///
/// ```swift
/// let diff = try JSONDiff(from: Data(#"{"mode":"auto"}"#.utf8), to: Data(#"{"mode":"manual","on":true}"#.utf8))
/// diff.operations  // [replace /mode "manual", add /on true]
/// ```
///
/// Objects are compared member by member (in key order), arrays element by element (elements
/// past the shorter end are added or removed from the end), anything else as a whole.
public struct JSONDiff: Sendable, Hashable {
    /// One JSON Patch operation.
    public struct Operation: Sendable, Hashable {
        /// `add`, `remove` or `replace`.
        public var op: String
        /// A JSON Pointer (RFC 6901) to the member or element.
        public var path: String
        /// The value after the change (nil for `remove`).
        public var value: JSONValue?
        /// The value before the change (nil for `add`); not part of JSON Patch.
        public var oldValue: JSONValue?
    }

    /// The operations that turn the old value into the new one; empty when they are equal.
    public var operations: [Operation]

    /// The diff from `old` to `new`; a missing side (a key created or deleted) is an `add` or
    /// `remove` of the whole document.
    ///
    /// - Throws: `DecodingError` when either side is not JSON.
    public init(from old: Data?, to new: Data?) throws {
        self.init(from: try old.map(JSONValue.init(json:)), to: try new.map(JSONValue.init(json:)))
    }

    /// The diff from `old` to `new`.
    public init(from old: JSONValue?, to new: JSONValue?) {
        var operations: [Operation] = []
        switch (old, new) {
        case (nil, nil): break
        case (nil, let new?): operations.append(Operation(op: "add", path: "", value: new, oldValue: nil))
        case (let old?, nil): operations.append(Operation(op: "remove", path: "", value: nil, oldValue: old))
        case (let old?, let new?): Self.compare(old, new, at: "", into: &operations)
        }
        self.operations = operations
    }

    private static func compare(_ old: JSONValue, _ new: JSONValue, at path: String, into operations: inout [Operation]) {
        switch (old, new) {
        case (.object(let before), .object(let after)):
            for key in Set(before.keys).union(after.keys).sorted() {
                let member = path + "/" + escaped(key)
                switch (before[key], after[key]) {
                case (let old?, let new?): compare(old, new, at: member, into: &operations)
                case (nil, let new?): operations.append(Operation(op: "add", path: member, value: new, oldValue: nil))
                case (let old?, nil): operations.append(Operation(op: "remove", path: member, value: nil, oldValue: old))
                case (nil, nil): break
                }
            }
        case (.array(let before), .array(let after)):
            for index in 0..<min(before.count, after.count) {
                compare(before[index], after[index], at: path + "/\(index)", into: &operations)
            }
            for index in before.count..<max(before.count, after.count) {
                operations.append(Operation(op: "add", path: path + "/\(index)", value: after[index], oldValue: nil))
            }
            // Removed from the end backwards, so each index is valid when its operation applies.
            for index in (after.count..<max(before.count, after.count)).reversed() {
                operations.append(Operation(op: "remove", path: path + "/\(index)", value: nil, oldValue: before[index]))
            }
        default:
            if old != new { operations.append(Operation(op: "replace", path: path, value: new, oldValue: old)) }
        }
    }

    /// A member name in a JSON Pointer: `~` as `~0`, `/` as `~1`.
    private static func escaped(_ key: String) -> String {
        key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }
}
