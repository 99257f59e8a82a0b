import ArgumentParser
import Foundation
import SharedState

/// A feature that watches a prefix and is slow at every batch: what a live but slow consumer
/// costs in memory, and whether it still ends at the latest state.
struct SlowConsumerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "slow-consumer",
        abstract: "Watch a prefix with a reducer that sleeps at every batch; keep the state it holds in a file."
    )

    @Option(help: "syncd's socket.")
    var socket: String?

    @Option(help: "The prefix to watch.")
    var prefix = "load/"

    @Option(help: "Milliseconds the reducer blocks for at every batch.")
    var sleepMilliseconds = 2

    @Option(help: "Where to write, every 100 ms, the state the reducer holds: {\"key\": n, …}.")
    var stateFile: String

    func run() async throws {
        let client = try await SharedStateClient.connect(.init(socketPath: socket, clientName: "slow-consumer"))
        try await Self.consume(client: client, prefix: prefix, pause: .milliseconds(sleepMilliseconds), stateFile: stateFile)
    }

    @MainActor
    static func consume(client: SharedStateClient, prefix: String, pause: Duration, stateFile: String) async throws {
        let store = Store(initialState: SlowMirror.State()) {
            SlowMirror(prefix: prefix, pause: pause)
        } withDependencies: {
            $0.sharedState = client
        }
        store.send(.start)
        var written: [String: Int]?
        while true {
            try await Task.sleep(for: .milliseconds(100))
            guard store.values != written else { continue }
            written = store.values
            let json = try JSONSerialization.data(withJSONObject: store.values, options: [.sortedKeys])
            try json.write(to: URL(fileURLWithPath: stateFile + ".tmp"))
            _ = rename(stateFile + ".tmp", stateFile)
        }
    }
}

/// Mirrors the `n` of every `{"n": …}` value under a prefix, slowly.
struct SlowMirror: Reducer, Sendable {
    struct Sample: Codable, Sendable {
        var n: Int
    }

    struct State: Equatable, Sendable {
        var values: [String: Int] = [:]
    }

    enum Action: Sendable {
        case start
        case changed(SharedItems<Sample>)
    }

    let prefix: String
    let pause: Duration

    func reduce(into state: inout State, action: Action) -> Effect<Action> {
        switch action {
        case .start:
            return .observe(prefix: prefix, as: Sample.self) { .changed($0) }
        case .changed(let items):
            // Slow on purpose: the main actor is busy, so batches wait for it.
            Thread.sleep(forTimeInterval: pause.seconds)
            if items.replacesAll { state.values = [:] }
            for key in items.deletes { state.values[key] = nil }
            for item in items.puts { state.values[item.key] = try? item.value.get().n }
            return .none
        }
    }
}
