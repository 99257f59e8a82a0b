import Foundation
import SharedStateWire
import SyncEngine

/// `backup`: writes a consistent copy of the state to a transfer's file, for an administrator
/// to read with `transfer_read`.
extension Sharedstate_V1_BackupRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        try session.requireAdministrator("back up the database", call.access)
        let transfer = try session.transfers.open()
        let engine = session.engine
        return session.suspend(call.id, abandoning: transfer.id) { () async throws(SharedStateError) in
            let revision = try await engine.backup(to: transfer.path)
            let size = (try? FileManager.default.attributesOfItem(atPath: transfer.path)[.size] as? NSNumber)?.uint64Value ?? 0
            return .backup(
                .with {
                    $0.transferID = transfer.id
                    $0.size = size
                    $0.revision = revision
                }
            )
        }
    }
}
