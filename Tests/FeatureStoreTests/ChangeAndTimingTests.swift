import Foundation
import Logging
import Synchronization
import Testing

@testable import FeatureStore

/// A search box: the features `onChange`, `debounce` and `throttle` are tried on.
struct SearchBox: Reducer, Sendable {
    struct State: Equatable, Sendable {
        var query = ""
        var changes: [String] = []
        var searches: [String] = []
        var published: [Int] = []
    }

    @CasePathable
    enum Action: Equatable, Sendable {
        case typed(String)
        case searched(String)
        case knobMoved(Int, latest: Bool)
        case knobPublished(Int)
        case stopSearching
        case stopPublishing
    }

    enum CancelID { case search, knob }

    @Dependency(\.continuousClock) var clock

    var body: some ReducerOf<Self> {
        Reduce { state, action in
            switch action {
            case .typed(let query):
                state.query = query
                return .run { send in await send(.searched(query)) }
                    .debounce(id: CancelID.search, for: .milliseconds(300), clock: clock)
            case .searched(let query):
                state.searches.append(query)
                return .none
            case .knobMoved(let value, let latest):
                return .run { send in await send(.knobPublished(value)) }
                    .throttle(id: CancelID.knob, for: .seconds(1), clock: clock, latest: latest)
            case .knobPublished(let value):
                state.published.append(value)
                return .none
            case .stopSearching:
                return .cancel(id: CancelID.search)
            case .stopPublishing:
                return .cancel(id: CancelID.knob)
            }
        }
        .onChange(of: \.query) { old, new in
            Reduce { state, _ in
                state.changes.append("\(old)→\(new)")
                return .none
            }
        }
    }
}

@MainActor
@Suite struct OnChangeTests {
    @Test func runsOnlyWhenTheValueChangedWithTheOldAndNewValue() async {
        let clock = TestClock()
        let store = TestStore(initialState: SearchBox.State()) {
            SearchBox()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.typed("a")) {
            $0.query = "a"
            $0.changes = ["→a"]
        }
        // The same query again changes nothing: the reducer does not run.
        await store.send(.typed("a"))
        await clock.advance(by: .milliseconds(300))
        await store.receive(.searched("a")) { $0.searches = ["a"] }
        await store.finish()
    }
}

@MainActor
@Suite struct TimingTests {
    @Test func debounceRunsTheLastEffectOnceTheTimeHasPassedWithoutAnother() async {
        let clock = TestClock()
        let store = TestStore(initialState: SearchBox.State()) {
            SearchBox()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.typed("s")) {
            $0.query = "s"
            $0.changes = ["→s"]
        }
        await clock.advance(by: .milliseconds(200))
        await store.send(.typed("sy")) {
            $0.query = "sy"
            $0.changes = ["→s", "s→sy"]
        }
        await clock.advance(by: .milliseconds(200))
        await store.send(.typed("syn")) {
            $0.query = "syn"
            $0.changes = ["→s", "s→sy", "sy→syn"]
        }
        await clock.advance(by: .milliseconds(299))
        #expect(store.state.searches.isEmpty)
        await clock.advance(by: .milliseconds(1))
        await store.receive(.searched("syn")) { $0.searches = ["syn"] }
        await clock.advance(by: .seconds(1))
        await store.finish()
    }

    @Test func aDebouncedEffectIsCancelledByItsIDWhileItWaits() async {
        let clock = TestClock()
        let store = TestStore(initialState: SearchBox.State()) {
            SearchBox()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.typed("x")) {
            $0.query = "x"
            $0.changes = ["→x"]
        }
        await store.send(.stopSearching)
        await clock.advance(by: .seconds(1))
        await store.finish()
    }

    @Test func throttleRunsTheFirstAtOnceAndTheLatestOfTheIntervalAtItsEnd() async {
        let clock = TestClock()
        let store = TestStore(initialState: SearchBox.State()) {
            SearchBox()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.knobMoved(1, latest: true))
        await store.receive(.knobPublished(1)) { $0.published = [1] }
        await clock.advance(by: .milliseconds(100))
        await store.send(.knobMoved(2, latest: true))
        await store.send(.knobMoved(3, latest: true))
        await clock.advance(by: .milliseconds(899))
        #expect(store.state.published == [1])
        await clock.advance(by: .milliseconds(1))
        await store.receive(.knobPublished(3)) { $0.published = [1, 3] }
        // The next interval runs from that start: a move 0.5 s later waits 0.5 s.
        await clock.advance(by: .milliseconds(500))
        await store.send(.knobMoved(4, latest: true))
        await clock.advance(by: .milliseconds(499))
        #expect(store.state.published == [1, 3])
        await clock.advance(by: .milliseconds(1))
        await store.receive(.knobPublished(4)) { $0.published = [1, 3, 4] }
        // Quiet for longer than the interval: the next runs at once.
        await clock.advance(by: .seconds(2))
        await store.send(.knobMoved(5, latest: true))
        await store.receive(.knobPublished(5)) { $0.published = [1, 3, 4, 5] }
        await store.finish()
    }

    @Test func aCancelledThrottleForgetsItsInterval() async {
        let clock = TestClock()
        let store = TestStore(initialState: SearchBox.State()) {
            SearchBox()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.knobMoved(1, latest: false))
        await store.receive(.knobPublished(1)) { $0.published = [1] }
        await store.send(.knobMoved(2, latest: false))
        // Cancelled while it waits: nothing runs, and the next one starts at once.
        await store.send(.stopPublishing)
        await clock.advance(by: .milliseconds(100))
        await store.send(.knobMoved(3, latest: false))
        await store.receive(.knobPublished(3)) { $0.published = [1, 3] }
        await clock.advance(by: .seconds(2))
        await store.finish()
    }

    @Test func throttleWithoutLatestRunsTheFirstOfTheInterval() async {
        let clock = TestClock()
        let store = TestStore(initialState: SearchBox.State()) {
            SearchBox()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.knobMoved(1, latest: false))
        await store.receive(.knobPublished(1)) { $0.published = [1] }
        await store.send(.knobMoved(2, latest: false))
        await store.send(.knobMoved(3, latest: false))
        await clock.advance(by: .seconds(1))
        await store.receive(.knobPublished(2)) { $0.published = [1, 2] }
        await clock.advance(by: .seconds(2))
        await store.finish()
    }
}

@MainActor
@Suite struct PrintChangesTests {
    @Test func printsEachActionAndTheStateDiffItMade() async {
        let lines = Mutex<[String]>([])
        let store = Store(initialState: Counter.State()) {
            Counter()._printChanges(to: ChangeOutput { text in lines.withLock { $0.append(text) } })
        }
        store.send(.increment)
        store.send(.echo("hi"))
        store.send(.stopTicking)
        let printed = lines.withLock { $0 }
        #expect(printed.count == 3)
        #expect(printed[0].hasPrefix("received action:\n  Counter.Action.increment\n"))
        #expect(printed[0].contains("-   count: 0,\n+   count: 1,"))
        #expect(printed[1].contains(#"Counter.Action.echo("hi")"#))
        #expect(printed[1].contains(#"+     [0]: "hi""#))
        #expect(printed[2].hasSuffix("  (No state changes)"))
    }

    @Test func printsEachActionATestStoreSendsAndReceives() async {
        let lines = Mutex<[String]>([])
        let store = TestStore(initialState: Counter.State()) {
            Counter()._printChanges(to: ChangeOutput { text in lines.withLock { $0.append(text) } })
        }
        await store.send(.incrementLater)
        await store.receive(.increment) { $0.count = 1 }
        await store.finish()
        let printed = lines.withLock { $0 }
        #expect(printed.count == 2)
        #expect(printed.first?.hasPrefix("received action:\n  Counter.Action.incrementLater\n") == true)
        #expect(printed.first?.hasSuffix("  (No state changes)") == true)
        #expect(printed.last?.contains("-   count: 0,\n+   count: 1,") == true)
    }

    @Test func printsToALogger() async {
        let messages = LogMessages()
        let logger = Logger(label: "test") { _ in CollectingLogHandler(messages: messages) }
        let store = Store(initialState: Counter.State()) {
            Counter()._printChanges(to: .logger(logger, level: .info))
        }
        store.send(.increment)
        #expect(messages.all.first?.contains("Counter.Action.increment") == true)
    }
}

/// What a `CollectingLogHandler` was given.
final class LogMessages: Sendable {
    private let messages = Mutex<[String]>([])

    var all: [String] { messages.withLock { $0 } }

    func append(_ message: String) {
        messages.withLock { $0.append(message) }
    }
}

/// A log handler that keeps what it is given.
struct CollectingLogHandler: LogHandler {
    let messages: LogMessages
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        messages.append(event.message.description)
    }
}
