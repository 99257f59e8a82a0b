import SharedStateWire
import SyncEngine

/// `put`: checked, queued, and handed to the engine with the other writes of the same read
/// (``ClientSession/submitQueuedWrites()``); answered when it commits.
extension Sharedstate_V1_PutRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        try session.queueWrite(.put(self), cause: cause, call)
    }
}
