import Foundation

extension SharedStateClient {
    /// The size of one chunk of a backup or restore transfer.
    private static let chunkBytes = 1 << 20

    /// Writes a consistent copy of syncd's database (SQLite's online backup) to `path`, while
    /// syncd keeps serving. The file is an SQLite database that ``restore(from:)`` accepts.
    ///
    /// - Throws: `unavailable` when syncd cannot make the copy, `invalidArgument` when the file
    ///   cannot be written.
    @discardableResult
    public func backup(to path: String) async throws(SharedStateError) -> BackupResult {
        let result = try await call(.backup(.init()))
        guard case .backup(let backup) = result else { throw unexpected(result) }
        let partial = path + ".partial"
        do {
            guard FileManager.default.createFile(atPath: partial, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw SharedStateError(.invalidArgument, "cannot create \(partial)")
            }
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: partial))
            defer { try? handle.close() }
            var offset: UInt64 = 0
            while offset < backup.size {
                let chunk = try await call(
                    .transferRead(
                        .with {
                            $0.transferID = backup.transferID
                            $0.offset = offset
                            $0.length = UInt32(Self.chunkBytes)
                        }
                    )
                )
                guard case .transferRead(let read) = chunk, !read.data.isEmpty else { throw unexpected(chunk) }
                try handle.write(contentsOf: read.data)
                offset += UInt64(read.data.count)
            }
            try handle.synchronize()
            _ = try? FileManager.default.removeItem(atPath: path)
            try FileManager.default.moveItem(atPath: partial, toPath: path)
        } catch {
            try? FileManager.default.removeItem(atPath: partial)
            _ = try? await call(.transferEnd(.with { $0.transferID = backup.transferID }))
            throw error as? SharedStateError
                ?? SharedStateError(.invalidArgument, "cannot write the backup to \(path): \(error.localizedDescription)")
        }
        _ = try await call(.transferEnd(.with { $0.transferID = backup.transferID }))
        return BackupResult(revision: backup.revision, bytes: backup.size)
    }

    /// Makes syncd's entries equal to those in the backup at `path`, as one new revision: puts
    /// for keys whose value differs, deletes for keys the backup lacks. Revisions keep
    /// increasing and watchers see the restore as an ordinary change; history is not restored.
    ///
    /// - Throws: `invalidArgument` when the file cannot be read or is not a syncd backup.
    @discardableResult
    public func restore(from path: String) async throws(SharedStateError) -> RestoreResult {
        let handle: FileHandle
        do {
            handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        } catch {
            throw SharedStateError(.invalidArgument, "cannot read \(path): \(error.localizedDescription)")
        }
        defer { try? handle.close() }
        var transferID: UInt64 = 0
        while true {
            let data: Data
            do {
                data = try handle.read(upToCount: Self.chunkBytes) ?? Data()
            } catch {
                throw SharedStateError(.invalidArgument, "cannot read \(path): \(error.localizedDescription)")
            }
            if data.isEmpty && transferID != 0 { break }
            let result = try await call(
                .transferWrite(
                    .with {
                        $0.transferID = transferID
                        $0.data = data
                    }
                )
            )
            guard case .transferWrite(let write) = result else { throw unexpected(result) }
            transferID = write.transferID
            if data.isEmpty { break }
        }
        let result = try await call(.restore(.with { $0.transferID = transferID }))
        guard case .restore(let restore) = result else { throw unexpected(result) }
        return RestoreResult(revision: restore.revision, puts: restore.puts, deletes: restore.deletes)
    }
}
