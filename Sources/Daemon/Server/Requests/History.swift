import SharedStateWire
import SyncEngine

/// `history`: a key's changes still in the change log, and who made each; read off the event
/// loop.
extension Sharedstate_V1_HistoryRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        try KeyRules.validateKey(key, limits: call.limits)
        try session.requireRead(key, call.access)
        let (engine, key, limit) = (session.engine, key, limit == 0 ? nil : Int(limit))
        // Anyone who may read the key sees who wrote it; the kernel's ids only administrators.
        let showsCredentials = call.access.isUnrestricted
        return session.suspend(call.id) { () async throws(SharedStateError) in
            let result = try await engine.history(of: key, limit: limit)
            return .history(
                .with {
                    $0.changes = result.changes.map(\.change.wireValue)
                    $0.origins = result.changes.map { logged in
                        .with {
                            $0.cause = logged.cause
                            $0.writer = .with {
                                $0.sessionID = logged.writerSession
                                $0.clientName = logged.clientName
                                if showsCredentials, let writer = logged.writer {
                                    $0.pid = writer.pid
                                    $0.uid = writer.uid
                                    $0.gid = writer.gid
                                }
                            }
                        }
                    }
                    $0.compactedRevision = result.compactedRevision
                }
            )
        }
    }
}
