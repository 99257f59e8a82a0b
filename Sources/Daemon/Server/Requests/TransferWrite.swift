import SharedStateWire
import SyncEngine

/// `transfer_write`: appends a chunk to an upload (a backup to restore), opening it with the
/// first; on the thread pool, for administrators.
extension Sharedstate_V1_TransferWriteRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        try session.requireAdministrator("upload a backup", call.access)
        let isNew = transferID == 0
        let transferID = isNew ? try session.transfers.open().id : transferID
        let path: String
        do {
            path = try session.transfers.appendable(transferID, size: data.count)
        } catch {
            if isNew { try? session.transfers.end(transferID) }
            throw error
        }
        let data = data
        // A new transfer that fails its first chunk is ended.
        return session.suspend(call.id, abandoning: isNew ? transferID : nil) { () async throws(SharedStateError) in
            let size = try await BackgroundWork.run { () throws(SharedStateError) in
                try TransferStore.appendChunk(data, to: transferID, at: path)
            }
            return .transferWrite(
                .with {
                    $0.transferID = transferID
                    $0.size = size
                }
            )
        }
    }
}
