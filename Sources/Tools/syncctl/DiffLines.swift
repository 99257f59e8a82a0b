import Foundation
import SyncClient

#if canImport(Glibc)
    import Glibc
#endif

/// The structural diff `watch --diff` and `history --diff` print under each change: a `−` line for
/// what went, a `+` line for what came, per JSON Pointer path, in color on a terminal only.
enum DiffLines {
    /// The diff of `change` from its previous entry; nil when that is unknown or a side is not
    /// JSON.
    static func diff(of change: Change) -> JSONDiff? {
        (try? change.diff()) ?? nil
    }

    /// The text lines for `diff`, indented under the change's own line.
    static func render(_ diff: JSONDiff?) -> [String] {
        guard let diff else { return ["  (the value before this change is not known)"] }
        var lines: [String] = []
        for operation in diff.operations {
            let path = operation.path.isEmpty ? "(the whole value)" : operation.path
            if let old = operation.oldValue { lines.append(color("  − \(path): \(old.jsonText)", code: 31)) }
            if let new = operation.value { lines.append(color("  + \(path): \(new.jsonText)", code: 32)) }
        }
        return lines
    }

    /// RFC 6902 operations as JSON text, for `--json`'s `patch` field.
    static func patchJSON(_ diff: JSONDiff) -> String {
        "["
            + diff.operations.map { operation in
                var object = #"{"op":"\#(operation.op)","path":\#(JSONValue.string(operation.path).jsonText)"#
                if let value = operation.value { object += #","value":\#(value.jsonText)"# }
                return object + "}"
            }.joined(separator: ",") + "]"
    }

    private static let isColored = isatty(STDOUT_FILENO) == 1 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil

    private static func color(_ line: String, code: Int) -> String {
        isColored ? "\u{1B}[\(code)m\(line)\u{1B}[0m" : line
    }
}
