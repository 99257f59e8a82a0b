import IssueReporting

/// Where a reducer or store was made, so that the issues it reports point there.
@usableFromInline
struct SourceLocation: Sendable, CustomStringConvertible {
    let fileID: StaticString
    let filePath: StaticString
    let line: UInt
    let column: UInt

    @usableFromInline
    init(fileID: StaticString, filePath: StaticString, line: UInt, column: UInt) {
        self.fileID = fileID
        self.filePath = filePath
        self.line = line
        self.column = column
    }

    @usableFromInline
    var description: String { "\(fileID):\(line)" }

    @usableFromInline
    func report(_ message: String) {
        reportIssue(message, fileID: fileID, filePath: filePath, line: line, column: column)
    }
}
