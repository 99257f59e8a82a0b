import Foundation
import SharedStateWire

/// Requests only syncd's own user and root may make (clients, backup, restore, compact) and the
/// transfers that carry backups both ways; file I/O on the thread pool.
extension ClientSession {
    /// Lists the connected clients, for administrators.
    func clients(_ call: Call) throws(SharedStateError) -> Step {
        let (id, access) = (call.id, call.access)
        try requireAdministrator("list clients", access)
        let clients = environment.clients
        return suspend(id) { () async throws(SharedStateError) in
            let clients = await clients()
            return .clients(.with { $0.clients = clients })
        }
    }

    /// Answers with the metrics, at once: rendering them reads counters and a few sizes.
    func metrics(_ call: Call) throws(SharedStateError) -> Step {
        try requireAdministrator("read the metrics", call.access)
        let text = environment.metrics()
        respond(call.id) { $0.metrics = .with { $0.text = text } }
        return .next
    }

    /// Writes a backup to a transfer's file, for the client to read.
    func backup(_ call: Call) throws(SharedStateError) -> Step {
        let (id, access) = (call.id, call.access)
        try requireAdministrator("back up the database", access)
        let transfer = try transfers.open()
        let engine = self.engine
        return suspend(id, abandoning: transfer.id) { () async throws(SharedStateError) in
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

    /// Reads a chunk of a transfer's file on the thread pool.
    func transferRead(_ read: Sharedstate_V1_TransferReadRequest, _ call: Call) throws(SharedStateError) -> Step {
        let id = call.id
        let (transferID, offset, length) = (read.transferID, read.offset, Int(read.length))
        let path = try transfers.readable(transferID, length: length)
        // File I/O never on the event loop: the connection waits, others go on.
        return suspend(id) { () async throws(SharedStateError) in
            let data = try await BackgroundWork.run { () throws(SharedStateError) in
                try TransferStore.readChunk(of: transferID, at: path, offset: offset, length: length)
            }
            return .transferRead(.with { $0.data = data })
        }
    }

    /// Appends a chunk to an upload on the thread pool, opening it with the first.
    func transferWrite(_ write: Sharedstate_V1_TransferWriteRequest, _ call: Call) throws(SharedStateError) -> Step {
        let (id, access) = (call.id, call.access)
        try requireAdministrator("upload a backup", access)
        let isNew = write.transferID == 0
        let transferID = isNew ? try transfers.open().id : write.transferID
        let path: String
        do {
            path = try transfers.appendable(transferID, size: write.data.count)
        } catch {
            if isNew { try? transfers.end(transferID) }
            throw error
        }
        let data = write.data
        // A new transfer that fails its first chunk is ended.
        return suspend(id, abandoning: isNew ? transferID : nil) { () async throws(SharedStateError) in
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

    /// Ends a transfer and removes its file.
    func transferEnd(_ end: Sharedstate_V1_TransferEndRequest, _ call: Call) throws(SharedStateError) -> Step {
        let id = call.id
        try transfers.end(end.transferID)
        respond(id) { $0.transferEnd = .init() }
        return .next
    }

    /// Restores an uploaded backup: read and checked on the thread pool, then one write.
    func restore(_ restore: Sharedstate_V1_RestoreRequest, _ call: Call) throws(SharedStateError) -> Step {
        let (id, limits, access) = (call.id, call.limits, call.access)
        try requireAdministrator("restore a backup", access)
        let path = try transfers.path(of: restore.transferID)
        let (engine, origin) = (self.engine, WriteOrigin(writer: writerIdentity, cause: "restore of a backup"))
        // The upload is used up whatever happens next. A write: a drain waits for its answer.
        writer.expectAnswers(1)
        return suspend(id, usingUp: restore.transferID, isWrite: true) { () async throws(SharedStateError) in
            let entries = try await Self.readBackup(at: path, limits: limits)
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

    /// Compacts the change log through a revision.
    func compact(_ compact: Sharedstate_V1_CompactRequest, _ call: Call) throws(SharedStateError) -> Step {
        let (id, access) = (call.id, call.access)
        try requireAdministrator("compact the change log", access)
        let (engine, revision) = (self.engine, compact.revision)
        return suspend(id) { () async throws(SharedStateError) in
            let compacted = try await engine.compact(through: revision)
            return .compact(.with { $0.compactedRevision = compacted })
        }
    }

    /// Reads an uploaded backup and checks its entries against `limits`, on NIO's thread pool:
    /// a backup of a million keys takes seconds to read, which no event loop may spend.
    private static func readBackup(at path: String, limits: Limits) async throws(SharedStateError) -> [Entry] {
        try await BackgroundWork.run { () throws(SharedStateError) in
            let entries = try Storage.entries(inBackup: path)
            for entry in entries {
                try KeyRules.validateKey(entry.key, limits: limits)
                try ValueRules.validateValue(entry.value, limits: limits)
            }
            return entries
        }
    }
}
