import CasePaths
import CustomDump
import Dependencies
import IssueReporting

/// Tests a feature step by step: each action sent or received, and exactly how it changed the
/// state, without a daemon.
///
/// ```swift
/// @Test @MainActor func heatsWhenCold() async {
///     let store = TestStore(initialState: Thermostat.State(target: 21)) {
///         Thermostat()
///     } withDependencies: {
///         $0.sharedState = InMemorySharedState()
///     }
///     await store.send(.readingChanged("kitchen", 18)) {
///         $0.readings["kitchen"] = 18
///         $0.heater = .heating
///     }
///     await store.receive(\.heaterPublished)
///     await store.finish()
/// }
/// ```
///
/// With ``Exhaustivity/on`` (the default) a test must say how every action changes the state,
/// receive every action effects send, and let every effect finish; anything else fails the test
/// at the line that caused it, with a diff of expected (−) and actual (+) state.
@MainActor
public final class TestStore<State: Equatable, Action: Sendable> {
    /// The state as the test has asserted it so far.
    public private(set) var state: State
    /// How much the store checks; see ``Exhaustivity``.
    public var exhaustivity: Exhaustivity = .on
    /// How long ``receive(_:timeout:assert:fileID:filePath:line:column:)`` and ``finish(timeout:fileID:filePath:line:column:)`` wait.
    public var timeout: Duration

    private let store: Store<State, Action>
    private let recorder: TestRecorder<State, Action>
    private let location: SourceLocation
    private var isFinished = false

    /// Creates a test store that runs `reducer` from `initialState`.
    ///
    /// - Parameter prepareDependencies: Sets the dependencies the feature uses. Dependencies are
    ///   in their test context: one that is not set and has no `testValue` fails the test when
    ///   used.
    public init<R: Reducer>(
        initialState: State,
        @ReducerBuilder<State, Action> reducer: () -> R,
        withDependencies prepareDependencies: (inout DependencyValues) -> Void = { _ in },
        timeout: Duration = .seconds(3),
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) where R.State == State, R.Action == Action {
        let recorder = TestRecorder<State, Action>()
        let base = reducer()
        self.recorder = recorder
        self.state = initialState
        self.timeout = timeout
        self.location = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        self.store = Store(
            initialState: initialState,
            reducer: { TestReducer(base: base, recorder: recorder) },
            withDependencies: {
                $0.context = .test
                prepareDependencies(&$0)
            },
            fileID: fileID,
            filePath: filePath,
            line: line,
            column: column
        )
    }

    isolated deinit {
        guard !isFinished else { return }
        checkLeftovers(at: location, finishing: false)
    }

    /// Sends `action` as the test, and checks the state it leads to.
    ///
    /// - Parameter updateStateToExpectedResult: Changes the previous state into the one expected
    ///   after the action; leave it out when the action must not change the state.
    /// - Returns: The effects the action started, to cancel or await.
    @discardableResult
    public func send(
        _ action: Action,
        assert updateStateToExpectedResult: ((inout State) throws -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async -> StoreTask {
        let here = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        if exhaustivity == .on && !recorder.received.isEmpty {
            here.report(
                """
                Must handle \(recorder.received.count) received \
                \(recorder.received.count == 1 ? "action" : "actions") before sending another:
                \(describe(recorder.received.map(\.action)))
                """
            )
        }
        recorder.isSendingFromTest = true
        recorder.stateAfterSent = nil
        let task = store.send(action)
        recorder.isSendingFromTest = false
        let actual = recorder.stateAfterSent ?? store.state
        check(actual: actual, update: updateStateToExpectedResult, after: "sending \(dump(action))", at: here)
        await letEffectsBegin()
        return task
    }

    /// Waits for the next action an effect sends, checks it is `expected`, and checks the state it
    /// leads to.
    public func receive(
        _ expected: Action,
        timeout: Duration? = nil,
        assert updateStateToExpectedResult: ((inout State) throws -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async where Action: Equatable {
        await receive(
            matching: { $0 == expected },
            describedAs: dump(expected),
            mismatch: { received in
                diff(expected, received, format: .proportional).map { "Expected (−), received (+):\n\($0)" }
            },
            timeout: timeout,
            update: updateStateToExpectedResult,
            at: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        )
    }

    /// Waits for the next action an effect sends, checks it is of case `actionCase`, and checks
    /// the state it leads to.
    ///
    /// ```swift
    /// await store.receive(\.readingPublished) { $0.published += 1 }
    /// ```
    public func receive<Value>(
        _ actionCase: CaseKeyPath<Action, Value>,
        timeout: Duration? = nil,
        assert updateStateToExpectedResult: ((inout State) throws -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async where Action: CasePathable {
        await receive(
            matching: { $0[case: actionCase] != nil },
            describedAs: "an action of case \(actionCase)",
            mismatch: { _ in nil },
            timeout: timeout,
            update: updateStateToExpectedResult,
            at: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        )
    }

    /// Waits for the next action an effect sends, checks it is of case `actionCase` carrying
    /// `value`, and checks the state it leads to.
    public func receive<Value: Equatable>(
        _ actionCase: CaseKeyPath<Action, Value>,
        _ value: Value,
        timeout: Duration? = nil,
        assert updateStateToExpectedResult: ((inout State) throws -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async where Action: CasePathable {
        await receive(
            matching: { $0[case: actionCase] == value },
            describedAs: "an action of case \(actionCase) carrying \(dump(value))",
            mismatch: { received in
                guard let actual = received[case: actionCase] else { return nil }
                return diff(value, actual, format: .proportional).map { "Expected (−), received (+):\n\($0)" }
            },
            timeout: timeout,
            update: updateStateToExpectedResult,
            at: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        )
    }

    /// Accepts every action received so far without checking them, and takes the state they led
    /// to as the asserted state.
    ///
    /// - Parameter strict: Report an issue when there was no action to skip.
    public func skipReceivedActions(
        strict: Bool = true,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        for _ in 0..<8 { await Task.yield() }
        guard let last = recorder.received.last else {
            if strict {
                reportIssue("There were no received actions to skip.", fileID: fileID, filePath: filePath, line: line, column: column)
            }
            return
        }
        state = last.state
        recorder.removeAllReceived()
    }

    /// Cancels the effects still running, so the test can end without waiting for them (for
    /// long-lived subscriptions a test does not care about).
    public func skipInFlightEffects() {
        store.cancelAllEffects()
    }

    /// Waits until every effect has finished, then checks that every received action was handled.
    ///
    /// Call it at the end of a test: an effect still running after `timeout` fails the test,
    /// with ``Exhaustivity/on``.
    public func finish(
        timeout: Duration? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        let here = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        let limit = timeout ?? self.timeout
        let finished = await waitUntil(limit) { [store] in store.runningEffects == 0 }
        if !finished && exhaustivity == .on {
            here.report(
                """
                \(store.runningEffects) \(store.runningEffects == 1 ? "effect was" : "effects were") still \
                running \(limit) after the test finished sending actions.
                Make sure long-running effects end (cancel them with an action), or call \
                skipInFlightEffects() for those the test does not care about.
                """
            )
        }
        isFinished = true
        checkLeftovers(at: here, finishing: true)
        store.cancelAllEffects()
    }

    // MARK: - Checking

    private func receive(
        matching isExpected: @escaping (Action) -> Bool,
        describedAs description: String,
        mismatch: (Action) -> String?,
        timeout: Duration?,
        update: ((inout State) throws -> Void)?,
        at here: SourceLocation
    ) async {
        let limit = timeout ?? self.timeout
        let recorder = self.recorder
        let exhaustivity = self.exhaustivity
        let arrived = await waitUntil(limit) {
            exhaustivity == .on ? !recorder.received.isEmpty : recorder.received.contains { isExpected($0.action) }
        }
        guard arrived else {
            let leftovers =
                exhaustivity == .off && !recorder.received.isEmpty
                ? "\nReceived instead:\n\(describe(recorder.received.map(\.action)))" : ""
            here.report("Expected to receive \(description), but received nothing within \(limit).\(leftovers)")
            return
        }
        if exhaustivity == .off {
            while let first = recorder.received.first, !isExpected(first.action) {
                state = first.state
                _ = recorder.removeFirstReceived()
            }
        }
        let received = recorder.removeFirstReceived()
        guard isExpected(received.action) else {
            let detail = mismatch(received.action).map { "\n\($0)" } ?? ""
            here.report("Expected to receive \(description), but received:\n\(dump(received.action))\(detail)")
            state = received.state
            return
        }
        check(actual: received.state, update: update, after: "receiving \(dump(received.action))", at: here)
        await letEffectsBegin()
    }

    /// Waits until the effects started so far have begun to execute and reached their first
    /// suspension (a clock's sleep, a watch), as they would have in a running process before the
    /// next event. Without this, a test that advances a `TestClock` right after `send` could do so
    /// before the effect asked to sleep.
    private func letEffectsBegin() async {
        guard store.runningEffects > 0 else { return }
        _ = await waitUntil(timeout) { [store] in store.effectsNotYetRunning == 0 }
        // Effects run on other threads: give them real time, not just turns of the main actor,
        // to reach their first suspension.
        for _ in 0..<3 {
            for _ in 0..<8 { await Task.yield() }
            try? await Task.sleep(for: .milliseconds(1))
        }
    }

    /// Compares the state after a step with what the test expected, and moves on to it.
    private func check(actual: State, update: ((inout State) throws -> Void)?, after step: String, at here: SourceLocation) {
        defer { state = actual }
        var expected = exhaustivity == .on ? state : actual
        if let update {
            do {
                try update(&expected)
            } catch {
                here.report("The state assertion threw an error: \(error)")
                return
            }
        }
        if expected == actual {
            if exhaustivity == .on, update != nil, actual == state {
                here.report("Expected the state to change after \(step), but it did not change.")
            }
            return
        }
        let difference = diff(expected, actual, format: .proportional) ?? "\(dump(expected))\n!=\n\(dump(actual))"
        if exhaustivity == .on && update == nil {
            here.report("The state changed after \(step), but the test did not say how: (expected −, actual +)\n\(difference)")
        } else {
            here.report("The state after \(step) does not match the expectation: (expected −, actual +)\n\(difference)")
        }
    }

    private func checkLeftovers(at here: SourceLocation, finishing: Bool) {
        guard exhaustivity == .on else { return }
        if !recorder.received.isEmpty {
            here.report(
                """
                The test ended with \(recorder.received.count) received \
                \(recorder.received.count == 1 ? "action" : "actions") it did not handle:
                \(describe(recorder.received.map(\.action)))
                Receive them with receive(_:), or skip them with skipReceivedActions().
                """
            )
        }
        if !finishing && store.runningEffects > 0 {
            here.report(
                """
                The test ended with \(store.runningEffects) \(store.runningEffects == 1 ? "effect" : "effects") \
                still running. End them with an action, await store.finish(), or call skipInFlightEffects().
                """
            )
        }
    }

    /// Polls `condition` (on the main actor, where reducers run) until it holds or `limit` passes.
    private func waitUntil(_ limit: Duration, _ condition: @MainActor () -> Bool) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: limit)
        while !condition() {
            guard clock.now < deadline else { return false }
            for _ in 0..<4 { await Task.yield() }
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return true
    }
}

private func dump(_ value: some Any) -> String {
    var output = ""
    customDump(value, to: &output)
    return output
}

private func describe<Action>(_ actions: [Action]) -> String {
    actions.map { "  • " + dump($0).replacingOccurrences(of: "\n", with: "\n    ") }.joined(separator: "\n")
}
