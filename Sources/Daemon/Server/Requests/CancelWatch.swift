import SharedStateWire
import SyncEngine

/// `cancel_watch`: ends one of this connection's watches.
extension Sharedstate_V1_CancelWatchRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        guard session.engine.cancelWatch(id: watchID, of: session.writer) else {
            throw SharedStateError(.notFound, "no watch with id \(watchID) on this connection")
        }
        session.respond(call.id) { $0.cancelWatch = .init() }
        return .next
    }
}
