import SharedStateWire
import SyncEngine

/// `restore`: makes the state equal to an uploaded backup, as one write, for administrators;
/// the backup is read and checked on the thread pool.
extension Sharedstate_V1_RestoreRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        try session.requireAdministrator("restore a backup", call.access)
        let path = try session.transfers.path(of: transferID)
        let (engine, limits, readBackup) = (session.engine, call.limits, session.environment.readBackup)
        let origin = WriteOrigin(writer: session.writerIdentity, cause: "restore of a backup")
        // The upload is used up whatever happens next. A write: a drain waits for its answer.
        session.writer.expectAnswers(1)
        return session.suspend(call.id, usingUp: transferID, isWrite: true) { () async throws(SharedStateError) in
            let entries = try await Self.readBackup(at: path, with: readBackup, limits: limits)
            let outcome = await engine.restore(entries, origin: origin)
            guard case .restored(let revision, let puts, let deletes) = try outcome.get() else {
                throw SharedStateError(.unavailable, "the restore was committed as something else")
            }
            return .restore(
                .with {
                    $0.revision = revision
                    $0.puts = UInt64(puts)
                    $0.deletes = UInt64(deletes)
                }
            )
        }
    }

    /// Reads an uploaded backup and checks its entries against `limits`, on NIO's thread pool:
    /// a backup of a million keys takes seconds to read, which no event loop may spend.
    private static func readBackup(
        at path: String, with read: @escaping @Sendable (String) throws(SharedStateError) -> [Entry], limits: Limits
    ) async throws(SharedStateError) -> [Entry] {
        try await BackgroundWork.run { () throws(SharedStateError) in
            let entries = try read(path)
            for entry in entries {
                try KeyRules.validateKey(entry.key, limits: limits)
                try ValueRules.validateValue(entry.value, limits: limits)
                // A schema syncd could not use would govern nothing in silence.
                if let prefix = SchemaKeys.prefix(ofKey: entry.key) {
                    do throws(SharedStateError) {
                        _ = try PrefixSchemas.schema(prefix: prefix, document: entry.value)
                    } catch {
                        throw SharedStateError(.invalidArgument, "the backup cannot be restored: \(error.message)")
                    }
                }
            }
            return entries
        }
    }
}
