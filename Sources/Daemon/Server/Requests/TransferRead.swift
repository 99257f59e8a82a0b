import SharedStateWire
import SyncEngine

/// `transfer_read`: a chunk of a transfer's file (a backup), read on the thread pool.
extension Sharedstate_V1_TransferReadRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        let (transferID, offset, length) = (transferID, offset, Int(length))
        let path = try session.transfers.readable(transferID, length: length)
        // File I/O never on the event loop: the connection waits, others go on.
        return session.suspend(call.id) { () async throws(SharedStateError) in
            let data = try await BackgroundWork.run { () throws(SharedStateError) in
                try TransferStore.readChunk(of: transferID, at: path, offset: offset, length: length)
            }
            return .transferRead(.with { $0.data = data })
        }
    }
}
