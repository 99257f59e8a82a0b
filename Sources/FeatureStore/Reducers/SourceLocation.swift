import IssueReporting

/// Where a reducer or store was made, so that the issues it reports point there.
struct SourceLocation: Sendable, CustomStringConvertible {
    let fileID: StaticString
    let filePath: StaticString
    let line: UInt
    let column: UInt

    var description: String { "\(fileID):\(line)" }

    func report(_ message: String) {
        reportIssue(message, fileID: fileID, filePath: filePath, line: line, column: column)
    }
}
