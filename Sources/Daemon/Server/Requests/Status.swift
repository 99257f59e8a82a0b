import SharedStateWire
import SyncEngine

/// `status`: the revision, the counts, the backend and the uptime, at once.
///
/// A user under the access policy (not syncd's own user nor root) sees what it may see: `keys`
/// counts the keys it may read, and the database's path is left out.
extension Sharedstate_V1_StatusRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        var status = Self.response(session.environment)
        if call.access.isUnrestricted {
            session.respond(call.id) { $0.status = status }
            return .next
        }
        status.databasePath = ""
        guard call.access.mayReadSome(under: "") else {
            status.keys = 0
            session.respond(call.id) { $0.status = status }
            return .next
        }
        switch session.engine.count(prefix: "", readable: session.readFilter(call.access)) {
        case .counted(let counting):
            status.keys = UInt64(counting.count)
            session.respond(call.id) { $0.status = status }
            return .next
        case .tooLarge(let large):
            return session.suspend(call.id) { [status] () async throws(SharedStateError) in
                var status = status
                status.keys = UInt64(try await BackgroundWork.run { () throws(SharedStateError) in large.count() }.count)
                return .status(status)
            }
        }
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
            if let durability = statistics.backend.durability {
                $0.durability = durability.mode
                $0.syncIntervalSeconds = durability.syncInterval.seconds
                $0.unsyncedSeconds = durability.unsyncedAge.seconds
                $0.unsyncedBytes = durability.unsyncedBytes
                $0.longestUnsyncedSeconds = durability.longestUnsyncedAge.seconds
                $0.unmovedBytes = durability.unmovedBytes
            }
        }
    }
}
