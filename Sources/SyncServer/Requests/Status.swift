import SharedStateWire
import SyncEngine

/// `status`: the revision, the counts, the backend and the uptime, at once.
extension Sharedstate_V1_StatusRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        let status = Self.response(session.environment)
        session.respond(call.id) { $0.status = status }
        return .next
    }

    /// What `status` shows of the server in `environment`, now.
    static func response(_ environment: ClientSession.Environment) -> Sharedstate_V1_StatusResponse {
        let statistics = environment.engine.statistics
        let uptime = ContinuousClock.now - environment.startTime
        return .with {
            $0.revision = statistics.revision
            $0.keys = UInt64(statistics.keys)
            $0.clients = UInt64(environment.connections.count)
            $0.watches = UInt64(statistics.watches)
            $0.compactedRevision = statistics.compactedRevision
            $0.databaseBytes = statistics.backend.bytes
            $0.uptimeSeconds = Double(uptime.components.seconds) + Double(uptime.components.attoseconds) / 1e18
            $0.serverVersion = WireProtocol.softwareVersion
            $0.databasePath = statistics.backend.location
            $0.backend = statistics.backend.name
            $0.backendRevision = statistics.backend.sourceRevision
            $0.staleSince = statistics.backend.staleSince ?? 0
        }
    }
}
