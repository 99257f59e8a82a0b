import ArgumentParser

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure a running syncd: durable writes per second, and delivery to watchers.",
        discussion: "Run it against a syncd of its own: it writes keys under bench/.",
        subcommands: [
            BenchPutCommand.self, BenchFanoutCommand.self, BenchWatchersCommand.self, BenchSnapshotCommand.self,
            BenchSubscriberCommand.self,
        ]
    )
}
