import SharedStateWire
import SyncEngine

/// `compact`: removes the change log through a revision, for administrators.
extension Sharedstate_V1_CompactRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        try session.requireAdministrator("compact the change log", call.access)
        let (engine, revision) = (session.engine, revision)
        return session.suspend(call.id) { () async throws(SharedStateError) in
            let compacted = try await engine.compact(through: revision)
            return .compact(.with { $0.compactedRevision = compacted })
        }
    }
}
