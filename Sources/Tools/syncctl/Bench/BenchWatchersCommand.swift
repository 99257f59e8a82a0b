import ArgumentParser
import Foundation
import SyncClient

/// Holds many idle watches, so what each costs syncd (memory, and CPU per write) can be measured.
struct BenchWatchersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watchers",
        abstract: "Hold idle watches until interrupted (for measuring what each watch costs syncd).",
        discussion: """
            Prints "ready N" (N watches) once every watch has its snapshot. Raise syncd's limits \
            (maxConnectionsPerUser, maxWatchesPerConnection) first for more than 256 of either.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: "Connections.")
    var connections = 1000

    @Option(help: "Watches on each connection.")
    var watchesPerConnection = 1

    @Option(help: "The prefix watched.")
    var prefix = "bench/idle/"

    @Flag(help: "Give every watch a prefix of its own (PREFIX<connection>/<watch>/), which no other watch shares.")
    var distinct = false

    func validate() throws {
        if connections < 1 { throw ValidationError("--connections must be at least 1") }
        if watchesPerConnection < 1 { throw ValidationError("--watches-per-connection must be at least 1") }
    }

    func run() async throws {
        var clients: [SharedStateClient] = []
        // Held so that each watch stays open: a watch ends when its stream is released.
        var iterators: [WatchStream.Iterator] = []
        for connection in 0..<connections {
            let client = try await options.connect()
            for watch in 0..<watchesPerConnection {
                let prefix = distinct ? "\(self.prefix)\(connection)/\(watch)/" : self.prefix
                var iterator = client.watch(prefixes: [prefix]).makeAsyncIterator()
                _ = try await CommandFailure.exitOnError { try await iterator.next() }
                iterators.append(iterator)
            }
            clients.append(client)
        }
        print("ready \(iterators.count)")
        fflush(nil)
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}
