import CasePaths
import CustomDump
import Dependencies
import Foundation
import IssueReporting
import Synchronization

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
/// at the line that caused it, with a diff of expected (−) and actual (+) state. A test that ends
/// without ``finish(timeout:fileID:filePath:line:column:)`` is checked when the store goes away.
///
/// Unlike TCA's, this test store does not switch the process to the main serial executor:
/// swift-testing runs tests in parallel in one process, and that switch is process-wide. Each
/// `send` and `receive` instead waits until the effects it started have reached their first
/// suspension. A suite that needs the serial executor runs `.serialized` inside
/// `withMainSerialExecutor`.
@MainActor
public final class TestStore<State: Equatable, Action: Sendable> {
    /// The state as the test has asserted it so far.
    public private(set) var state: State
    /// How much the store checks; see ``Exhaustivity``.
    public var exhaustivity: Exhaustivity = .on {
        didSet { ending.withLock { $0.isExhaustive = exhaustivity == .on } }
    }
    /// How long `receive(_:timeout:assert:fileID:filePath:line:column:)` and ``finish(timeout:fileID:filePath:line:column:)`` wait.
    public var timeout: Duration

    /// The dependencies the reducer sees from now on, and the effects it returns capture.
    ///
    /// ```swift
    /// store.dependencies.continuousClock = ImmediateClock()
    /// ```
    public var dependencies: DependencyValues {
        get { store.dependencies }
        set { store.dependencies = newValue }
    }

    private let store: Store<State, Action>
    private nonisolated let recorder: TestRecorder<State, Action>
    private nonisolated let effects: EffectTasks
    private nonisolated let location: SourceLocation
    /// What the end-of-test check needs, readable from the deinit on any thread.
    private nonisolated let ending = Mutex(Ending())

    private struct Ending {
        var isExhaustive = true
        var isFinished = false
    }

    /// Creates a test store that runs `reducer` from `initialState`.
    ///
    /// The reducer is made inside the test's dependencies, so a dependency it reads when it is
    /// created sees what `prepareDependencies` set.
    ///
    /// - Parameters:
    ///   - prepareDependencies: Sets the dependencies the feature uses. Dependencies are
    ///     in their test context: one that is not set and has no `testValue` fails the test when
    ///     used.
    ///   - initialState: The state the feature starts in.
    ///   - reducer: The feature's reducer.
    ///   - timeout: How long `receive` and `finish` wait unless told otherwise.
    ///   - fileID: The file of the call, where a failure is reported (the caller's by default).
    ///   - filePath: The full path of that file (the caller's by default).
    ///   - line: The line of the call (the caller's by default).
    ///   - column: The column of the call (the caller's by default).
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
        self.recorder = recorder
        self.state = initialState
        self.timeout = timeout
        self.location = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        self.store = Store(
            initialState: initialState,
            reducer: { TestReducer<R>(base: reducer()._reduceFunction, recorder: recorder) },
            withDependencies: {
                $0.context = .test
                prepareDependencies(&$0)
            },
            fileID: fileID,
            filePath: filePath,
            line: line,
            column: column
        )
        self.effects = store.effects
    }

    // Not `isolated`: a plain deinit runs where the last reference goes, at the end of the test
    // function and in its task, where the test framework can still tell which test to fail. An
    // isolated deinit runs without the test's task-local values, and its reports were lost.
    deinit {
        let ending = self.ending.withLock { $0 }
        guard ending.isExhaustive, !ending.isFinished else { return }
        if Thread.isMainThread {
            MainActor.assumeIsolated { checkLeftovers(at: location, finishing: false) }
        } else {
            // Off the main actor only the counts can be read.
            reportLeftovers(actions: recorder.leftovers, effects: effects.running, at: location)
        }
    }

    /// Sends `action` as the test, and checks the state it leads to.
    ///
    /// - Parameters:
    ///   - updateStateToExpectedResult: Changes the previous state into the one expected
    ///     after the action; leave it out when the action must not change the state.
    ///   - action: The action the test sends.
    ///   - fileID: The file of the call, where a failure is reported (the caller's by default).
    ///   - filePath: The full path of that file (the caller's by default).
    ///   - line: The line of the call (the caller's by default).
    ///   - column: The column of the call (the caller's by default).
    /// - Returns: The effects the action started (and those the actions they send start), to
    ///   cancel or await with a timeout.
    @discardableResult
    public func send(
        _ action: Action,
        assert updateStateToExpectedResult: ((inout State) throws -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async -> TestStoreTask {
        let here = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        if exhaustivity == .on && !recorder.received.isEmpty {
            here.report(
                """
                Must handle \(counted(recorder.received.count, "received action")) before sending another:
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
        return TestStoreTask(rawValue: task, timeout: timeout)
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

    /// Waits for the next `expected.count` actions effects send, checks they are `expected` in
    /// any order, and checks the state after the last of them.
    ///
    /// For effects that really run side by side (two watches started together), whose actions
    /// have no fixed order; the state in between depends on the order and is not checked.
    ///
    /// ```swift
    /// await store.receive(inAnyOrder: [.heaterChanged(.success(nil)), .readingChanged(.success(reading))]) {
    ///     $0.heaterKnown = true
    ///     $0.reading = reading
    /// }
    /// ```
    public func receive(
        inAnyOrder expected: [Action],
        timeout: Duration? = nil,
        assert updateStateToExpectedResult: ((inout State) throws -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async where Action: Equatable {
        await receive(
            inAnyOrder: expected.map { ExpectedAction.action($0) }, timeout: timeout, assert: updateStateToExpectedResult,
            fileID: fileID, filePath: filePath, line: line, column: column)
    }

    /// Like `receive(inAnyOrder:timeout:assert:fileID:filePath:line:column:)-([Action])`, with
    /// each action expected exactly (`.action(_:)`), by its case (`.matching(\.doorsChanged)`),
    /// or by a predicate (`.matching { … }`): for actions that carry what a test cannot predict
    /// (a revision, a time). Each action received is paired with an expectation it satisfies, so
    /// that every expectation gets one when that is possible, whatever the order they are listed in.
    ///
    /// ```swift
    /// await store.receive(inAnyOrder: [.matching(\.doorsChanged), .action(.heaterChanged(.success(nil)))]) {
    ///     $0.doors = ["doors/1": Door(isLocked: true)]
    ///     $0.heaterKnown = true
    /// }
    /// ```
    public func receive(
        inAnyOrder expected: [ExpectedAction<Action>],
        timeout: Duration? = nil,
        assert updateStateToExpectedResult: ((inout State) throws -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        let here = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        guard !expected.isEmpty else { return }
        let limit = timeout ?? self.timeout
        let recorder = self.recorder
        let isExhaustive = exhaustivity == .on
        /// The expectations no action of `actions` satisfies; nil when `actions` holds one that
        /// meets no expectation (with an exhaustive store, where everything must be expected).
        func missing(from actions: [Action]) -> [ExpectedAction<Action>]? {
            let pairs = ExpectedAction.pair(expected, with: actions)
            if isExhaustive, pairs.compactMap({ $0 }).count < min(actions.count, expected.count) || actions.count > expected.count {
                return nil
            }
            return expected.indices.filter { pairs[$0] == nil }.map { expected[$0] }
        }
        let arrived = await waitUntil(limit) {
            isExhaustive
                ? recorder.received.count >= expected.count
                : missing(from: recorder.received.map(\.action))?.isEmpty == true
        }
        guard arrived else {
            let received = recorder.received.map(\.action)
            let pairs = ExpectedAction.pair(expected, with: received)
            let stillMissing = expected.indices.filter { pairs[$0] == nil }.map { expected[$0].description }
            here.report(
                """
                Expected to receive \(counted(expected.count, "action")) in any order, but \
                \(counted(stillMissing.count, "action")) did not come within \(limit):
                \(stillMissing.joined(separator: "\n"))
                """
                    + (received.isEmpty ? "" : "\nReceived:\n\(describe(received))")
            )
            return
        }
        var taken: [TestRecorder<State, Action>.Received] = []
        // Exhaustive: exactly as many as expected, whatever they are. Otherwise: until every
        // expectation has its action, skipping others.
        while isExhaustive ? taken.count < expected.count : missing(from: taken.map(\.action))?.isEmpty != true,
            !recorder.received.isEmpty
        {
            taken.append(recorder.removeFirstReceived())
        }
        if missing(from: taken.map(\.action))?.isEmpty != true {
            here.report(
                """
                Expected to receive, in any order:
                \(expected.map(\.description).joined(separator: "\n"))
                but received:
                \(describe(taken.map(\.action)))
                """
            )
            state = taken.last?.state ?? state
            return
        }
        if !isExhaustive && taken.count > expected.count {
            let pairs = ExpectedAction.pair(expected, with: taken.map(\.action))
            let paired = Set(pairs.compactMap { $0 })
            let skipped = taken.indices.filter { !paired.contains($0) }.map { taken[$0].action }
            showSkipped("Skipped receiving \(counted(skipped.count, "action")):\n\(describe(skipped))", at: here)
        }
        guard let last = taken.last else { return }
        let step = "receiving \(counted(expected.count, "action")) in any order"
        check(actual: last.state, update: updateStateToExpectedResult, after: step, at: here)
        await letEffectsBegin()
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
        let here = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        await receive(
            matching: { $0[case: actionCase] != nil },
            describedAs: describe(actionCase, at: here),
            mismatch: { _ in nil },
            timeout: timeout,
            update: updateStateToExpectedResult,
            at: here
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
        let here = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        await receive(
            matching: { $0[case: actionCase] == value },
            describedAs: "\(describe(actionCase, at: here)) carrying \(dump(value))",
            mismatch: { received in
                guard let actual = received[case: actionCase] else { return nil }
                return diff(value, actual, format: .proportional).map { "Expected (−), received (+):\n\($0)" }
            },
            timeout: timeout,
            update: updateStateToExpectedResult,
            at: here
        )
    }

    /// Waits for the next action an effect sends, checks that `isMatching` accepts it, and checks
    /// the state it leads to.
    ///
    /// ```swift
    /// await store.receive({ if case .loaded(let items) = $0 { items.count == 3 } else { false } }) {
    ///     $0.items = [1, 2, 3]
    /// }
    /// ```
    public func receive(
        _ isMatching: @escaping (Action) -> Bool,
        timeout: Duration? = nil,
        assert updateStateToExpectedResult: ((inout State) throws -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        await receive(
            matching: isMatching,
            describedAs: "an action that matches the predicate",
            mismatch: { _ in nil },
            timeout: timeout,
            update: updateStateToExpectedResult,
            at: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        )
    }

    /// Checks the current state without sending or receiving an action: the state the test
    /// asserted last, changed by `updateStateToExpectedResult`, must be the store's state (with
    /// ``Exhaustivity/off``, the fields it sets must match).
    public func assert(
        _ updateStateToExpectedResult: @escaping (inout State) throws -> Void,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) {
        let here = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        let actual = exhaustivity == .on ? state : store.state
        check(actual: actual, update: updateStateToExpectedResult, after: "the assertion", at: here, mayBeUnchanged: true)
    }

    /// Runs `operation` with ``exhaustivity`` set to `exhaustivity`, then sets it back.
    @discardableResult
    public func withExhaustivity<Result>(
        _ exhaustivity: Exhaustivity,
        _ operation: () throws -> Result
    ) rethrows -> Result {
        let previous = self.exhaustivity
        self.exhaustivity = exhaustivity
        defer { self.exhaustivity = previous }
        return try operation()
    }

    /// Runs `operation` with ``exhaustivity`` set to `exhaustivity`, then sets it back.
    @discardableResult
    public func withExhaustivity<Result>(
        _ exhaustivity: Exhaustivity,
        _ operation: () async throws -> Result
    ) async rethrows -> Result {
        let previous = self.exhaustivity
        self.exhaustivity = exhaustivity
        defer { self.exhaustivity = previous }
        return try await operation()
    }

    /// Accepts every action received so far without checking them, and takes the state they led
    /// to as the asserted state.
    ///
    /// - Parameters:
    ///   - strict: Report an issue when there was no action to skip.
    ///   - fileID: The file of the call, where a failure is reported (the caller's by default).
    ///   - filePath: The full path of that file (the caller's by default).
    ///   - line: The line of the call (the caller's by default).
    ///   - column: The column of the call (the caller's by default).
    public func skipReceivedActions(
        strict: Bool = true,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        let here = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        for _ in 0..<8 { await Task.yield() }
        guard let last = recorder.received.last else {
            if strict { here.report("There were no received actions to skip.") }
            return
        }
        showSkipped(
            "Skipped receiving \(counted(recorder.received.count, "action")):\n"
                + describe(recorder.received.map(\.action)),
            at: here
        )
        state = last.state
        recorder.removeAllReceived()
    }

    /// Cancels the effects still running and waits for them to end, so the test can finish
    /// without waiting for them (for long-lived subscriptions a test does not care about).
    ///
    /// - Parameters:
    ///   - strict: Report an issue when no effect was running.
    ///   - fileID: The file of the call, where a failure is reported (the caller's by default).
    ///   - filePath: The full path of that file (the caller's by default).
    ///   - line: The line of the call (the caller's by default).
    ///   - column: The column of the call (the caller's by default).
    public func skipInFlightEffects(
        strict: Bool = true,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        let here = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        let running = effects.running
        guard !running.isEmpty else {
            if strict { here.report("There were no in-flight effects to skip.") }
            return
        }
        showSkipped("Skipped \(counted(running.count, "in-flight effect")):\n\(describe(running))", at: here)
        store.cancelAllEffects()
        _ = await waitUntil(timeout) { [store] in store.runningEffects == 0 }
    }

    /// Waits until every effect has finished, then checks that every received action was handled.
    ///
    /// Call it at the end of a test: an effect still running after `timeout` fails the test,
    /// with ``Exhaustivity/on``. A test that ends without calling it is checked when the store
    /// goes away, at the end of the test function: actions not received and effects still
    /// running fail it there.
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
        if !finished {
            let running = effects.running
            let message = """
                \(counted(running.count, "effect")) \(running.count == 1 ? "was" : "were") still running \(limit) \
                after the test finished sending actions:
                \(describe(running))
                Make sure long-running effects end (cancel them with an action), or call \
                skipInFlightEffects() for those the test does not care about.
                """
            if exhaustivity == .on { here.report(message) } else { showSkipped(message, at: here) }
        }
        ending.withLock { $0.isFinished = true }
        checkLeftovers(at: here, finishing: true)
        store.cancelAllEffects()
    }

    // MARK: - Checking

    private func receive(
        matching isExpected: @escaping (Action) -> Bool,
        describedAs description: @autoclosure () -> String,
        mismatch: (Action) -> String?,
        timeout: Duration?,
        update: ((inout State) throws -> Void)?,
        at here: SourceLocation
    ) async {
        let limit = timeout ?? self.timeout
        let recorder = self.recorder
        let isExhaustive = exhaustivity == .on
        let arrived = await waitUntil(limit) {
            isExhaustive ? !recorder.received.isEmpty : recorder.received.contains { isExpected($0.action) }
        }
        guard arrived else {
            let leftovers =
                !isExhaustive && !recorder.received.isEmpty
                ? "\nReceived instead:\n\(describe(recorder.received.map(\.action)))" : ""
            here.report("Expected to receive \(description()), but received nothing within \(limit).\(leftovers)")
            return
        }
        if !isExhaustive {
            var skipped: [Action] = []
            while let first = recorder.received.first, !isExpected(first.action) {
                state = first.state
                skipped.append(recorder.removeFirstReceived().action)
            }
            if !skipped.isEmpty {
                showSkipped(
                    "Skipped receiving \(counted(skipped.count, "action")):\n\(describe(skipped))",
                    at: here
                )
            }
        }
        let received = recorder.removeFirstReceived()
        guard isExpected(received.action) else {
            let detail = mismatch(received.action).map { "\n\($0)" } ?? ""
            here.report("Expected to receive \(description()), but received:\n\(dump(received.action))\(detail)")
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
    private func check(
        actual: State,
        update: ((inout State) throws -> Void)?,
        after step: String,
        at here: SourceLocation,
        mayBeUnchanged: Bool = false
    ) {
        defer { state = actual }
        let isExhaustive = exhaustivity == .on
        var expected = isExhaustive ? state : actual
        var exhaustiveExpectation = state
        if let update {
            do {
                try update(&expected)
                if !isExhaustive { try update(&exhaustiveExpectation) }
            } catch {
                here.report("The state assertion threw an error: \(error)")
                return
            }
        }
        if expected == actual {
            if isExhaustive, !mayBeUnchanged, update != nil, actual == state {
                here.report("Expected the state to change after \(step), but it did not change.")
            }
            if !isExhaustive, exhaustiveExpectation != actual {
                let difference = diff(exhaustiveExpectation, actual, format: .proportional) ?? ""
                showSkipped("A state change after \(step) was not asserted: (expected −, actual +)\n\(difference)", at: here)
            }
            return
        }
        let difference = diff(expected, actual, format: .proportional) ?? "\(dump(expected))\n!=\n\(dump(actual))"
        if isExhaustive && update == nil {
            here.report("The state changed after \(step), but the test did not say how: (expected −, actual +)\n\(difference)")
        } else {
            here.report("The state after \(step) does not match the expectation: (expected −, actual +)\n\(difference)")
        }
    }

    /// Reports what an exhaustive test would have failed on, as a known issue, when the store is
    /// ``Exhaustivity/off(showSkippedAssertions:)`` with skipped assertions shown.
    private func showSkipped(_ message: String, at here: SourceLocation) {
        guard case .off(showSkippedAssertions: true) = exhaustivity else { return }
        withExpectedIssue(fileID: here.fileID, filePath: here.filePath, line: here.line, column: here.column) {
            here.report(message)
        }
    }

    private func checkLeftovers(at here: SourceLocation, finishing: Bool) {
        guard exhaustivity == .on else {
            if !recorder.received.isEmpty {
                let actions = recorder.received.map(\.action)
                showSkipped("\(counted(actions.count, "received action")) not asserted:\n\(describe(actions))", at: here)
            }
            return
        }
        if !recorder.received.isEmpty {
            here.report(
                """
                The test ended with \(counted(recorder.received.count, "received action")) it did not handle:
                \(describe(recorder.received.map(\.action)))
                Receive them with receive(_:), or skip them with skipReceivedActions().
                """
            )
        }
        if !finishing { reportLeftovers(actions: 0, effects: effects.running, at: here) }
    }

    /// Reports received actions the test did not handle (by count) and effects still running.
    private nonisolated func reportLeftovers(actions: Int, effects running: [EffectDescription], at here: SourceLocation) {
        if actions > 0 {
            here.report(
                """
                The test ended with \(counted(actions, "received action")) it did not handle. \
                Receive them with receive(_:), or skip them with skipReceivedActions().
                """
            )
        }
        if !running.isEmpty {
            here.report(
                """
                The test ended with \(counted(running.count, "effect")) still running:
                \(describe(running))
                End them with an action, await store.finish(), or call skipInFlightEffects().
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

/// A test store for reducer `R`: `TestStoreOf<Thermostat>`.
public typealias TestStoreOf<R: Reducer> = TestStore<R.State, R.Action> where R.State: Equatable

func dump(_ value: some Any) -> String {
    var output = ""
    customDump(value, to: &output)
    return output
}

func describe<Item>(_ items: [Item]) -> String {
    items.map { "  • " + dump($0).replacingOccurrences(of: "\n", with: "\n    ") }.joined(separator: "\n")
}

/// "an action of case …" for a case key path: its name where the runtime knows it. On Linux a case
/// path prints as `\Case<Action>.<computed 0x…>`, so the case is named as the test's line at
/// `location` writes it (``CaseKeyPathText``), or, without the source, by the line and the type
/// of what the case carries.
func describe<Root, Value>(_ actionCase: CaseKeyPath<Root, Value>, at location: SourceLocation) -> String {
    let name = String(describing: actionCase)
    guard name.contains("<computed") else { return "an action of case \(name)" }
    if let text = CaseKeyPathText.at(location) { return "an action of case \(text)" }
    return "an action of the case named at \(location.fileID):\(location.line) (it carries \(Value.self))"
}

/// "1 action", "2 actions".
private func counted(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
}

private func describe(_ effects: [EffectDescription]) -> String {
    effects.map { "  • \($0)" }.joined(separator: "\n")
}
