import Foundation

/// The etcd leases this syncd holds for its sessions, in a file beside its lock file, so that the
/// next syncd on this host can revoke them as soon as it starts.
///
/// A syncd that is killed cannot revoke its sessions' leases: their ephemeral keys would outlive
/// it by up to the lease's TTL, and a feature process that reconnects to the new syncd would find
/// its presence key still held by its dead session and could not put it back. The leases of a
/// previous run belong to sessions that are all gone, like the ephemeral keys a SQLite syncd
/// expires when it starts.
///
/// The file holds one lease id per line, in decimal. It is rewritten whole (to a temporary file,
/// then renamed) each time a lease is granted or given up; it is not synced to disk, since a host
/// that crashes is down for longer than the leases live.
package struct LeaseLedger: Sendable {
    let path: String

    /// The ledger beside the lock file of `databasePath`.
    package init(databasePath: String) {
        path = databasePath + ".etcd-leases"
    }

    /// The leases recorded, none if there is no file.
    ///
    /// - Throws: When the file exists but cannot be read, or holds a line that is not a lease id.
    func read() throws -> [Int64] {
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return try text.split(separator: "\n").enumerated().map { number, line in
            guard let id = Int64(line), id != 0 else {
                throw LeaseLedgerError(path: path, line: number + 1, text: String(line))
            }
            return id
        }
    }

    /// Records exactly `leases`.
    func write(_ leases: some Collection<Int64>) throws {
        let text = leases.sorted().map { "\($0)\n" }.joined()
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }
}

/// A line of the lease ledger that is not a lease id.
package struct LeaseLedgerError: Error, CustomStringConvertible {
    let path: String
    let line: Int
    let text: String

    package var description: String { "\(path), line \(line): \"\(text)\" is not an etcd lease id" }
}
