import CasePaths

/// One action a test expects an effect to send, for `TestStore.receive(inAnyOrder:)` given expectations:
/// exactly an action, any action of a case, or any action a predicate accepts.
///
/// ```swift
/// await store.receive(inAnyOrder: [.matching(\.doorsChanged), .action(.path(.element(id: 0, action: .start)))]) {
///     $0.doors = ["doors/1": Door(isLocked: true)]
/// }
/// ```
public struct ExpectedAction<Action> {
    let matches: (Action) -> Bool
    /// How a failure names it; made only for a failure.
    let described: () -> String
    var description: String { described() }

    /// Exactly `action`.
    public static func action(_ action: Action) -> Self where Action: Equatable {
        Self(matches: { $0 == action }, described: { describe([action]) })
    }

    /// Any action of the case `actionCase`, whatever it carries; a failure names the case as the
    /// line that made it writes it.
    public static func matching<Value>(
        _ actionCase: CaseKeyPath<Action, Value>,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) -> Self where Action: CasePathable {
        let here = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        return Self(matches: { $0[case: actionCase] != nil }, described: { "  • " + describe(actionCase, at: here) })
    }

    /// Any action `predicate` accepts; a failure names it by the line that made it.
    public static func matching(
        _ predicate: @escaping (Action) -> Bool, fileID: StaticString = #fileID, line: UInt = #line
    ) -> Self {
        Self(matches: predicate, described: { "  • an action the predicate at \(fileID):\(line) accepts" })
    }
}

extension ExpectedAction {
    /// Pairs each of `actions` with one of `expected` it satisfies, as many pairs as possible
    /// (Kuhn's augmenting paths: a broad expectation never takes an action that only a narrower
    /// one could take, whatever the order they are listed in). Returns, for each expectation, the
    /// index of its action, or nil.
    static func pair(_ expected: [Self], with actions: [Action]) -> [Int?] {
        var actionOf = [Int?](repeating: nil, count: expected.count)
        var expectationOf = [Int?](repeating: nil, count: actions.count)
        func augment(_ expectation: Int, visited: inout [Bool]) -> Bool {
            for action in actions.indices where !visited[action] && expected[expectation].matches(actions[action]) {
                visited[action] = true
                if expectationOf[action] == nil || augment(expectationOf[action]!, visited: &visited) {
                    expectationOf[action] = expectation
                    actionOf[expectation] = action
                    return true
                }
            }
            return false
        }
        for expectation in expected.indices {
            var visited = [Bool](repeating: false, count: actions.count)
            _ = augment(expectation, visited: &visited)
        }
        return actionOf
    }
}
