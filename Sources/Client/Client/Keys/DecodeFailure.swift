import Foundation
import Logging

/// Why a stored value is not a typed key's `Value`, said as a schema violation is: where inside the
/// value (a JSON Pointer) and what is wrong there (`/on: expected Bool, found a string`,
/// `/speed: missing`), from the `DecodingError` and the value itself.
enum DecodeFailure {
    /// Where decode failures are said out loud: at warning, the level a default logging set-up
    /// shows, since a value a feature cannot read is a fault of some writer to fix.
    static let logger = Logger(label: "sharedstate.decoding")

    /// `error`'s place and reason in `data`, such as `/on: expected Bool, found a string`; of the
    /// value itself, the reason alone (`expected Double, found a string`).
    static func describe(_ error: any Error, in data: Data) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        let value = try? JSONValue(parsing: data)
        func said(_ path: [any CodingKey], _ reason: String) -> String {
            path.isEmpty ? reason : "\(pointer(path)): \(reason)"
        }
        switch error {
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            return said(context.codingPath, "expected \(name(of: type)), found \(found(at: context.codingPath, in: value))")
        case .keyNotFound(let key, let context):
            return said(context.codingPath + [key], "missing")
        case .dataCorrupted(let context):
            return said(context.codingPath, context.debugDescription)
        @unknown default:
            return "\(error)"
        }
    }

    /// A type as a decoding error names it: the containers `JSONDecoder` asks for are said as JSON
    /// says them.
    private static func name(of type: Any.Type) -> String {
        switch type {
        case is [String: Any].Type: "an object"
        case is [Any].Type: "an array"
        default: "\(type)"
        }
    }

    /// A coding path as a JSON Pointer (RFC 6901).
    static func pointer(_ path: [any CodingKey]) -> String {
        path.map { key in "/" + (key.intValue.map(String.init) ?? ValueSchema.escaped(key.stringValue)) }.joined()
    }

    /// What `value` holds at `path`: its kind, or "nothing" when the path leads nowhere.
    private static func found(at path: [any CodingKey], in value: JSONValue?) -> String {
        var current = value
        for key in path {
            switch current {
            case .array(let elements)?:
                current = key.intValue.flatMap { elements.indices.contains($0) ? elements[$0] : nil }
            case .object(let members)?:
                current = members[key.stringValue]
            default:
                current = nil
            }
        }
        return current.map(ValueSchema.kind(of:)) ?? "nothing"
    }
}
