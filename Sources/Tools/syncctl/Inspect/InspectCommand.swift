import ArgumentParser
import Foundation
import NIOCore
import Subprocess
import SyncClient

struct InspectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Serve a live web page of the state: keys, changes with who made them, time travel, clients.",
        discussion: """
            Connects to syncd as the user who runs it (syncd's access policy applies to everything the \
            page shows) and serves the page on a loopback address. The printed URL carries a random \
            token that every request must carry. Runs until interrupted. The page's API is in \
            docs/INSPECTOR.md.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: "Where to listen: a loopback HOST:PORT; port 0 takes a free one.")
    var address = "127.0.0.1:0"

    @Flag(help: "Open the page in the desktop's browser (xdg-open).")
    var open = false

    func validate() throws {
        do {
            _ = try InspectorAddress(parsing: address)
        } catch {
            throw ValidationError(error.message)
        }
    }

    func run() async throws {
        let address = try InspectorAddress(parsing: address)
        let client = try await options.connect(clientName: "syncctl inspect")
        let feed = InspectorFeed(client: client, writers: InspectorWriters(client: client))
        let server = InspectorHTTPServer(api: InspectorAPI(client: client, feed: feed), feed: feed, page: PackageResources.inspector_html)
        let bound: (channel: any Channel, gate: InspectorGate)
        do {
            bound = try await server.bind(address, token: InspectorGate.newToken())
        } catch {
            CommandFailure.fail("cannot listen on \(address.host):\(address.port): \(error)", code: 1)
        }
        let port = bound.channel.localAddress?.port ?? address.port
        let host = address.host.contains(":") ? "[\(address.host)]" : address.host
        let url = "http://\(host):\(port)/?token=\(bound.gate.token)"
        print("inspector at \(url)  (Ctrl-C stops it)")
        fflush(nil)  // nil flushes every stream: a script reading the URL gets it now
        if open { Self.openInBrowser(url) }
        await feed.run()
    }

    /// Opens `url` with `xdg-open`, in the background: the inspector serves meanwhile.
    private static func openInBrowser(_ url: String) {
        Task.detached {
            do {
                _ = try await Subprocess.run(.name("xdg-open"), arguments: [url], output: .discarded, error: .discarded)
            } catch {
                FileHandle.standardError.write(Data("syncctl: cannot run xdg-open (\(error)); open the URL above yourself\n".utf8))
            }
        }
    }
}
