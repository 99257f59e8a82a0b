import ArgumentParser
import Foundation
import SyncClient

/// Holds many idle watching connections, so the memory each costs syncd can be measured.
struct BenchWatchersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watchers",
        abstract: "Hold idle watching connections until interrupted (for measuring syncd's memory per watcher).",
        discussion: "Prints \"ready N\" once every connection's watch has its snapshot. Raise syncd's connection limits first."
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: "Connections, each with one watch.")
    var connections = 1000

    @Option(help: "The prefix each connection watches.")
    var prefix = "bench/idle/"

    func validate() throws {
        if connections < 1 { throw ValidationError("--connections must be at least 1") }
    }

    func run() async throws {
        var clients: [SharedStateClient] = []
        // Held so that each watch stays open: a watch ends when its stream is released.
        var iterators: [WatchStream.Iterator] = []
        for _ in 0..<connections {
            let client = try await options.connect()
            var iterator = client.watch(prefixes: [prefix]).makeAsyncIterator()
            _ = try await CommandFailure.exitOnError { try await iterator.next() }
            clients.append(client)
            iterators.append(iterator)
        }
        print("ready \(clients.count)")
        fflush(nil)
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}
