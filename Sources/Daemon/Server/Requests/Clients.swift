import SharedStateWire
import SyncEngine

/// `clients`: every connected client, for administrators.
extension Sharedstate_V1_ClientsRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        try session.requireAdministrator("list clients", call.access)
        let (records, engine) = (session.environment.connections.records, session.engine)
        return session.suspend(call.id) { () async throws(SharedStateError) in
            var clients: [Sharedstate_V1_ClientInfo] = []
            for record in records {
                // Read on the connection's own event loop.
                let report = await record.writer.report
                let age = ContinuousClock.now - record.connectedAt
                clients.append(
                    .with {
                        $0.sessionID = record.sessionID
                        $0.name = record.clientName
                        $0.pid = record.credentials?.pid ?? 0
                        $0.uid = record.credentials?.uid ?? 0
                        $0.gid = record.credentials?.gid ?? 0
                        $0.watches = UInt64(engine.watchCount(of: record.writer))
                        $0.queuedBytes = UInt64(report.queuedBytes)
                        $0.resyncs = report.resyncs
                        $0.eventsDelivered = report.eventsDelivered
                        $0.schemaRefusals = report.schemaRefusals
                        $0.connectedSeconds = Double(age.components.seconds) + Double(age.components.attoseconds) / 1e18
                        $0.admission = record.admission
                    }
                )
            }
            return .clients(.with { $0.clients = clients })
        }
    }
}
