import Foundation
import SharedStateWire

/// The backup downloads and restore uploads of one connection: temporary files next to the
/// database, removed when the transfer ends or the connection closes.
package final class TransferStore {
    /// The largest chunk one request may read or write.
    static let maxChunkBytes = 1 << 20
    /// How many transfers one connection may have open.
    static let maxOpenTransfers = 4

    private let directory: String
    private let sessionID: UInt64
    private var files: [UInt64: String] = [:]
    private var lastID: UInt64 = 0

    init(directory: String, sessionID: UInt64) {
        self.directory = directory.isEmpty ? "." : directory
        self.sessionID = sessionID
    }

    /// A new, empty transfer file; returns its id and path.
    func open() throws(SharedStateError) -> (id: UInt64, path: String) {
        if files.count >= Self.maxOpenTransfers {
            throw SharedStateError(.limitReached, "this connection already has \(Self.maxOpenTransfers) transfers open; end one first")
        }
        lastID += 1
        let path = "\(directory)/.transfer-\(sessionID)-\(lastID).sqlite"
        unlinkFile(path)
        guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw SharedStateError(.unavailable, "cannot create a transfer file in \(directory)")
        }
        files[lastID] = path
        return (lastID, path)
    }

    /// The file of an open transfer.
    func path(of id: UInt64) throws(SharedStateError) -> String {
        guard let path = files[id] else { throw SharedStateError(.notFound, "no transfer \(id) on this connection") }
        return path
    }

    /// The file of transfer `id` and a check of a chunk's length: what a read needs before it
    /// runs off the event loop (see ``readChunk(of:at:offset:length:)``).
    func readable(_ id: UInt64, length: Int) throws(SharedStateError) -> String {
        let path = try path(of: id)
        guard length > 0 else { throw SharedStateError(.invalidArgument, "a chunk must be at least 1 byte") }
        guard length <= Self.maxChunkBytes else {
            throw SharedStateError(.tooLarge, "chunks are at most \(Self.maxChunkBytes) bytes, not \(length)")
        }
        return path
    }

    /// The file of transfer `id` and a check of a chunk's size: what an append needs before it
    /// runs off the event loop (see ``appendChunk(_:to:at:)``).
    func appendable(_ id: UInt64, size: Int) throws(SharedStateError) -> String {
        let path = try path(of: id)
        guard size <= Self.maxChunkBytes else {
            throw SharedStateError(.tooLarge, "chunks are at most \(Self.maxChunkBytes) bytes, not \(size)")
        }
        return path
    }

    /// Reads up to `length` bytes of transfer `id`'s file at `path` from `offset`: blocking I/O,
    /// for a thread pool.
    static func readChunk(of id: UInt64, at path: String, offset: UInt64, length: Int) throws(SharedStateError) -> Data {
        do {
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            try handle.seek(toOffset: offset)
            return try handle.read(upToCount: length) ?? Data()
        } catch {
            throw SharedStateError(.unavailable, "cannot read transfer \(id): \(error.localizedDescription)")
        }
    }

    /// Appends `data` to transfer `id`'s file at `path` and returns the file's new size: blocking
    /// I/O, for a thread pool.
    static func appendChunk(_ data: Data, to id: UInt64, at path: String) throws(SharedStateError) -> UInt64 {
        do {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            let end = try handle.seekToEnd()
            try handle.write(contentsOf: data)
            return end + UInt64(data.count)
        } catch {
            throw SharedStateError(.unavailable, "cannot write transfer \(id): \(error.localizedDescription)")
        }
    }

    /// Ends a transfer and removes its file.
    func end(_ id: UInt64) throws(SharedStateError) {
        let path = try path(of: id)
        files[id] = nil
        unlinkFile(path)
    }

    /// Removes the files a previous run left in `directory` (syncd was killed mid-transfer).
    package static func removeLeftovers(in directory: String) {
        let directory = directory.isEmpty ? "." : directory
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for name in names where name.hasPrefix(".transfer-") {
            try? FileManager.default.removeItem(atPath: directory + "/" + name)
        }
    }

    /// Removes every file; called when the connection ends.
    func removeAll() {
        for path in files.values { unlinkFile(path) }
        files = [:]
    }

    private func unlinkFile(_ path: String) {
        for suffix in ["", "-journal", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }
}
