/// The effects one ``TestStore/send(_:assert:fileID:filePath:line:column:)`` started: await them
/// with a time limit, or cancel them.
///
/// ```swift
/// await store.send(.save).finish()   // fails the test if the save is still running after the timeout
/// ```
public struct TestStoreTask: Hashable, Sendable {
    /// The task the test store's underlying ``Store`` returned, for code that takes a
    /// ``StoreTask``.
    public let rawValue: StoreTask
    let timeout: Duration

    /// Cancels the effects, and those of the actions they sent.
    public func cancel() async {
        rawValue.cancel()
        await rawValue.finish()
    }

    /// Waits until the effects, and the effects of the actions they sent, have finished; fails the
    /// test (and cancels them) if they are still running after `timeout` (the store's timeout
    /// when nil).
    public func finish(
        timeout: Duration? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        let limit = timeout ?? self.timeout
        let task = rawValue
        let finished = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await task.finish()
                return !Task.isCancelled
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        if !finished {
            SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column).report(
                "Expected the effects to finish within \(limit), but they were still running; they were cancelled."
            )
        }
    }

    /// Whether the effects were cancelled (true when there were none).
    public var isCancelled: Bool { rawValue.isCancelled }
}
