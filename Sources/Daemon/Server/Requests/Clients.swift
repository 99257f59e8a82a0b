import SharedStateWire
import SyncEngine

/// `clients`: every connected client, for administrators (who may read every key); with
/// `details`, each one's watches and ephemeral keys too.
extension Sharedstate_V1_ClientsRequest: ClientRequest {
    /// The most ephemeral keys listed per client.
    static let ephemeralKeysListed = 1_000

    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        try session.requireAdministrator("list clients", call.access)
        let (records, engine, details) = (session.environment.connections.records, session.engine, details)
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
                        if let violation = report.lastSchemaRefusal { $0.lastSchemaRefusal = violation.wireValue }
                        if details {
                            $0.watchList = engine.watches(of: record.writer).map { watch in
                                .with {
                                    $0.watchID = watch.id
                                    $0.prefixes = watch.prefixes
                                    $0.previousValues = watch.previousValues
                                    $0.catchingUp = watch.isCatchingUp
                                    $0.owesResync = watch.owesResync
                                }
                            }
                            let ephemeral = engine.ephemeralKeys(of: record.sessionID, limit: Self.ephemeralKeysListed)
                            $0.ephemeralKeys = ephemeral.keys
                            $0.ephemeralKeyCount = UInt64(ephemeral.count)
                        }
                        $0.connectedSeconds = Double(age.components.seconds) + Double(age.components.attoseconds) / 1e18
                        $0.admission = record.admission
                    }
                )
            }
            return .clients(.with { $0.clients = clients })
        }
    }
}
