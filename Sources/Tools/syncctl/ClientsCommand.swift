import ArgumentParser
import Foundation
import SyncClient

struct ClientsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clients",
        abstract:
            "List the connected clients: session, process, user, watches, events delivered, queued bytes, resyncs, writes refused for a schema, admission, name.",
        discussion: """
            With --details, each client's watches (their prefixes) and the ephemeral keys bound to its session follow its \
            row, and the latest write refused for a schema is named.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Flag(help: "Also list each client's watches, ephemeral keys and latest write refused for a schema.")
    var details = false

    func run() async throws {
        let client = try await options.connect()
        let clients = try await CommandFailure.exitOnError { try await client.clients(details: details) }
        if options.json {
            let objects = clients.map {
                JSONObject()
                    .number("session", $0.sessionID)
                    .string("name", $0.name)
                    .number("pid", $0.pid)
                    .number("uid", $0.uid)
                    .number("gid", $0.gid)
                    .number("watches", $0.watches)
                    .number("eventsDelivered", $0.eventsDelivered)
                    .number("queuedBytes", $0.queuedBytes)
                    .number("resyncs", $0.resyncs)
                    .number("schemaRefusals", $0.schemaRefusals)
                    .number("connectedSeconds", $0.connectedSeconds)
                    .string("admission", $0.admission.description)
                    .adding(lastRefusal: $0.lastSchemaRefusal)
                    .adding(details: details ? $0 : nil)
                    .rendered
            }
            print("[" + objects.joined(separator: ",") + "]")
            return
        }
        print("SESSION      PID    UID  WATCHES     EVENTS   QUEUED  RESYNCS  REFUSED  CONNECTED  ADMISSION  NAME")
        for info in clients {
            let columns = [
                pad("\(info.sessionID)", 7), pad("\(info.pid)", 8), pad("\(info.uid)", 6), pad("\(info.watches)", 8),
                pad("\(info.eventsDelivered)", 10),
                pad("\(info.queuedBytes)", 8), pad("\(info.resyncs)", 8), pad("\(info.schemaRefusals)", 8),
                pad("\(Int(info.connectedSeconds))s", 10),
            ]
            let admission = info.admission == .waitingForHello ? "no Hello" : "\(info.admission)"
            print(columns.joined(separator: " ") + "  " + admission.padding(toLength: 9, withPad: " ", startingAt: 0) + "  " + info.name)
            if details { printDetails(of: info) }
        }
    }

    private func printDetails(of info: ClientInfo) {
        for watch in info.watchList {
            let prefixes = watch.prefixes.isEmpty ? "every key" : watch.prefixes.map(KeyRules.quoted).joined(separator: ", ")
            var notes: [String] = []
            if watch.previousValues { notes.append("previous values") }
            if watch.isCatchingUp { notes.append("catching up") }
            if watch.owesResync { notes.append("owed a resync") }
            print("         watch \(watch.id): \(prefixes)" + (notes.isEmpty ? "" : " (" + notes.joined(separator: ", ") + ")"))
        }
        for key in info.ephemeralKeys { print("         ephemeral \(KeyRules.quoted(key))") }
        if info.ephemeralKeyCount > UInt64(info.ephemeralKeys.count) {
            print("         … and \(info.ephemeralKeyCount - UInt64(info.ephemeralKeys.count)) more ephemeral keys")
        }
        if let refusal = info.lastSchemaRefusal { print("         latest refused: \(refusal)") }
    }

    private func pad(_ text: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - text.count)) + text
    }
}

extension JSONObject {
    fileprivate func adding(lastRefusal: SchemaViolation?) -> JSONObject {
        guard let lastRefusal else { return self }
        return raw("lastSchemaRefusal", Data(JSONObject.violation(lastRefusal).rendered.utf8))
    }

    fileprivate func adding(details info: ClientInfo?) -> JSONObject {
        guard let info else { return self }
        return array("watchList", info.watchList.map { JSONObject.watch($0).rendered })
            .array("ephemeralKeys", info.ephemeralKeys.map(KeyRules.quoted))
            .number("ephemeralKeyCount", info.ephemeralKeyCount)
    }
}
