import Foundation

/// The text of the case key path a test wrote, read back from its source file: on Linux a case
/// key path prints as `\Case<Action>.<computed 0x…>`, so a failure names the case by what the
/// test's line says (`\.fanChanged`, `\.path[id: 2].ready`). Read only when a failure is reported.
enum CaseKeyPathText {
    /// The first key path literal at or after `location`'s column on its line, if the file is
    /// there to read and the line holds one.
    static func at(_ location: SourceLocation) -> String? {
        guard let source = try? String(contentsOfFile: "\(location.filePath)", encoding: .utf8) else { return nil }
        let lines = source.split(separator: "\n", omittingEmptySubsequences: false)
        guard location.line >= 1, location.line <= lines.count else { return nil }
        let line = lines[Int(location.line) - 1]
        let start = line.index(line.startIndex, offsetBy: max(0, Int(location.column) - 1), limitedBy: line.endIndex) ?? line.startIndex
        guard let backslash = line[start...].firstIndex(of: "\\") else { return nil }
        return literal(startingAt: backslash, in: line)
    }

    /// The key path from its backslash to the `,`, `)` or `{` that ends the argument (outside
    /// brackets).
    static func literal(startingAt backslash: Substring.Index, in line: Substring) -> String? {
        var depth = 0
        var end = line.index(after: backslash)
        while end < line.endIndex {
            let character = line[end]
            if character == "[" || character == "(" {
                depth += 1
            } else if character == "]" || (character == ")" && depth > 0) {
                depth -= 1
            } else if depth == 0, character == "," || character == ")" || character == "{" {
                break
            }
            end = line.index(after: end)
        }
        let text = line[backslash..<end].trimmingCharacters(in: .whitespaces)
        return text.count > 1 ? text : nil
    }
}
