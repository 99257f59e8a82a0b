import SharedStateWire
import SyncEngine

/// `delete`: checked, queued, and handed to the engine with the other writes of the same read;
/// answered when it commits.
extension Sharedstate_V1_DeleteRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        try session.queueWrite(.delete(self), cause: cause, call)
    }
}
