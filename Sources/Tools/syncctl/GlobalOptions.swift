import ArgumentParser
import Foundation
import SyncClient

/// The options every command takes, before or after the command's name.
struct GlobalOptions: ParsableArguments {
    @Option(
        help: """
            syncd's socket. Default: $SYNCD_SOCKET; else syncd's own default \
            ($RUNTIME_DIRECTORY/syncd.sock, $XDG_RUNTIME_DIR/syncd/syncd.sock or /tmp/syncd-$UID/syncd.sock) \
            when a socket is there; else the system service's /run/syncd/syncd.sock.
            """
    )
    var socket: String?

    @Flag(help: "Print JSON: one object, or one object per line for watch.")
    var json = false

    /// Connects to syncd, or exits with code 4 and a message naming the socket.
    ///
    /// - Parameters:
    ///   - reconnects: Whether the client reconnects when syncd goes away.
    ///   - clientName: The name `syncctl clients` and the writers of revisions show.
    func connect(reconnects: Bool = true, clientName: String = "syncctl") async throws -> SharedStateClient {
        var configuration = SharedStateClient.Configuration(socketPath: socket, clientName: clientName)
        configuration.reconnects = reconnects
        // Not through CommandFailure.exitOnError: a closure capturing the `var` above crashed when
        // the typed-throwing connect failed (Swift 6.3.1, debug builds).
        do {
            return try await SharedStateClient.connect(configuration)
        } catch {
            CommandFailure.fail(error.message, code: CommandFailure.exitCode(for: error))
        }
    }
}
