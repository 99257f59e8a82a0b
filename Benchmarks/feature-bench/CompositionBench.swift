import ArgumentParser
import Foundation
import SharedState

/// What scoping costs: an action for one of 1,000 elements through `forEach`, against a flat
/// reducer that does the same work inline, in the same run.
struct CompositionBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compose",
        abstract: "Cost per action of a scoped forEach over N elements against a flat reducer."
    )

    @Option(help: "Elements in the collection.")
    var elements = 1_000

    @Option(help: "Actions per measurement.")
    var count = 1_000_000

    @Option(help: "Measurements of each, alternated.")
    var rounds = 3

    @Flag(help: "Print {\"flat_ns\":…,\"for_each_ns\":…,\"stack_ns\":…,\"ratio\":…} only.")
    var json = false

    func validate() throws {
        guard elements >= 1 else { throw ValidationError("--elements \(elements): the collection needs at least one element") }
        guard count >= 1 else { throw ValidationError("--count \(count): send at least one action") }
        guard rounds >= 1 else { throw ValidationError("--rounds \(rounds): measure at least once") }
    }

    func run() async throws {
        var flat: [Double] = []
        var scoped: [Double] = []
        var stack: [Double] = []
        for _ in 0..<rounds {
            flat.append(await Self.measure(Rows(), elements: elements, count: count))
            scoped.append(await Self.measure(ScopedRows(), elements: elements, count: count))
            stack.append(await Self.measureStack(elements: min(elements, 64), count: count))
        }
        let best = (flat: flat.min()!, scoped: scoped.min()!, stack: stack.min()!)
        let ratio = best.scoped / best.flat
        if json {
            print(#"{"flat_ns":\#(Int(best.flat)),"for_each_ns":\#(Int(best.scoped)),"stack_ns":\#(Int(best.stack)),"ratio":\#(ratio)}"#)
        } else {
            print("an action for one of \(elements) elements, best of \(rounds) × \(count):")
            print("  flat reducer:       \(Int(best.flat)) ns")
            print("  forEach + Scope:    \(Int(best.scoped)) ns (\(String(format: "%.2f", ratio))× flat)")
            print("  stack of \(min(elements, 64)), forEach: \(Int(best.stack)) ns")
        }
    }

    /// Nanoseconds per action, each action for the next element in turn.
    @MainActor
    static func measure<R: Reducer>(_ reducer: R, elements: Int, count: Int) -> Double
    where R.State == Rows.State, R.Action == Rows.Action {
        let store = Store(initialState: Rows.State(rows: IdentifiedArray(uniqueElements: (0..<elements).map { Row.State(id: $0) }))) {
            reducer
        }
        let start = ContinuousClock.now
        for index in 0..<count { store.send(.rows(.element(id: index % elements, action: .increment))) }
        let elapsed = ContinuousClock.now - start
        precondition(store.rows.reduce(0) { $0 + $1.count } == count, "lost actions")
        return elapsed.seconds * 1e9 / Double(count)
    }

    @MainActor
    static func measureStack(elements: Int, count: Int) -> Double {
        let store = Store(initialState: Path.State(path: StackState((0..<elements).map { Row.State(id: $0) }))) { Path() }
        let ids = store.path.ids
        let start = ContinuousClock.now
        for index in 0..<count { store.send(.path(.element(id: ids[index % elements], action: .increment))) }
        let elapsed = ContinuousClock.now - start
        precondition(store.path.reduce(0) { $0 + $1.count } == count, "lost actions")
        return elapsed.seconds * 1e9 / Double(count)
    }
}

/// One element: a counter.
struct Row: Reducer {
    struct State: Equatable, Identifiable, Sendable {
        var id: Int
        var count = 0
    }

    enum Action: Equatable, Sendable { case increment }

    func reduce(into state: inout State, action: Action) -> Effect<Action> {
        state.count += 1
        return .none
    }
}

/// The flat baseline: the element's work done inline by the parent.
struct Rows: Reducer {
    struct State: Equatable {
        var rows: IdentifiedArrayOf<Row.State>
    }

    @CasePathable
    enum Action: Equatable, Sendable {
        case rows(IdentifiedActionOf<Row>)
    }

    func reduce(into state: inout State, action: Action) -> Effect<Action> {
        switch action {
        case .rows(.element(let id, .increment)):
            state.rows[id: id]?.count += 1
            return .none
        }
    }
}

/// The same through `forEach`.
struct ScopedRows: Reducer {
    var body: some Reducer<Rows.State, Rows.Action> {
        EmptyReducer<Rows.State, Rows.Action>()
            .forEach(\.rows, action: \.rows) { Row() }
    }
}

/// The same on a navigation stack.
struct Path: Reducer {
    struct State: Equatable {
        var path: StackState<Row.State>
    }

    @CasePathable
    enum Action: Equatable, Sendable {
        case path(StackActionOf<Row>)
    }

    var body: some ReducerOf<Self> {
        EmptyReducer<State, Action>()
            .forEach(\.path, action: \.path) { Row() }
    }
}
