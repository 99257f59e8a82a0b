import SharedStateWire
import SyncEngine

/// `transfer_end`: ends a transfer and removes its file.
extension Sharedstate_V1_TransferEndRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        try session.transfers.end(transferID)
        session.respond(call.id) { $0.transferEnd = .init() }
        return .next
    }
}
