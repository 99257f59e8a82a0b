import ArgumentParser

/// The `syncd` executable: runs the daemon (``ServeCommand``, also without a subcommand), or
/// gets a database past a journal that stops its start (``RecoverCommand``).
@main
struct SyncdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncd",
        abstract: "The SharedState daemon: holds keyed shared state, persists it in SQLite and broadcasts every change.",
        subcommands: [ServeCommand.self, RecoverCommand.self],
        defaultSubcommand: ServeCommand.self
    )
}
