import ArgumentParser
import Foundation
import SyncClient

struct ClientsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clients",
        abstract: "List the connected clients: session, process, user, watches, events delivered, queued bytes, resyncs, admission, name."
    )

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let client = try await options.connect()
        let clients = try await CommandFailure.exitOnError { try await client.clients() }
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
        }
    }

    private func pad(_ text: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - text.count)) + text
    }
}
