import ArgumentParser
import Foundation

/// `syncctl`: inspect and control syncd from a shell or a script.
@main
struct Syncctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncctl",
        abstract: "Inspect and control the SharedState daemon (syncd).",
        discussion: """
            Exit codes: 0 success, 1 usage or other error, 2 key not found, 3 conflict (a compare \
            failed), 4 cannot reach syncd, 5 permission denied, 6 a schema is broken.
            """,
        // Every command file of this folder (Syncctl+Subcommands.swift, generated).
        subcommands: subcommands
    )

    @OptionGroup var options: GlobalOptions

    /// Parses and runs a command; usage errors exit with 1, as scripts expect.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            let message = fullMessage(for: error)
            if code == .success {
                print(message)
                Foundation.exit(0)
            }
            if !message.isEmpty {
                FileHandle.standardError.write(Data((message + "\n").utf8))
            }
            Foundation.exit(code == .validationFailure ? 1 : code.rawValue)
        }
    }
}
