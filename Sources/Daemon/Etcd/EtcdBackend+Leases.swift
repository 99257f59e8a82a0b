import EtcdClient
import Foundation
import SharedStateWire
import SyncEngine
import Synchronization

/// Ephemeral keys: one etcd lease per session that puts any, granted at its first ephemeral put,
/// kept alive while this syncd runs, revoked when the session ends. The leases held are recorded
/// in the ``LeaseLedger``, and the next syncd on this host revokes those of a syncd that was
/// killed before it could.
package extension EtcdBackend {
    /// The lease of `session`, granted now if it has none.
    func lease(for session: UInt64) async throws(SharedStateError) -> Int64 {
        if let id = leases.withLock({ $0.lease(of: session) }) { return id }
        let id: Int64
        do {
            id = try await client.grantLease(ttl: configuration.leaseTTL)
        } catch {
            throw Self.writeFailure(error)
        }
        leases.withLock { $0.bind(session, to: id) }
        recordLeases()
        return id
    }

    /// Revokes the lease of a session that ended: etcd deletes its keys, at one revision. If
    /// etcd cannot be told, the lease is no longer kept alive and expires by itself.
    func revokeLease(of session: UInt64) async {
        guard let id = leases.withLock({ $0.unbind(session) }) else { return }
        defer { recordLeases() }
        do {
            try await client.revokeLease(id)
        } catch {
            logger.warning(
                "could not revoke a closed session's lease; its keys go when it expires",
                metadata: ["session": "\(session)", "lease": "\(id)", "error": "\(error)"])
        }
    }

    /// Revokes every lease still held, at shutdown.
    func revokeEveryLease() async {
        for session in leases.withLock({ $0.sessions }) { await revokeLease(of: session) }
    }

    /// Renews every lease a third of the TTL before it would expire, until cancelled.
    func keepLeasesAlive() async {
        let interval = Duration.milliseconds(configuration.leaseTTL * 1000 / 3)
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            let held = leases.withLock { $0.leases }
            guard !held.isEmpty else { continue }
            do {
                let remaining = try await client.keepAlive(held)
                for (id, ttl) in remaining where ttl <= 0 {
                    // Expired while etcd was out of reach: its keys are gone on every host.
                    if let session = leases.withLock({ $0.forget(lease: id) }) {
                        logger.warning(
                            "a session's lease expired; its ephemeral keys were deleted, and its connection is closed so that its client puts them back",
                            metadata: ["session": "\(session)"])
                        recordLeases()
                        leaseLost.withLock { $0 }?(session)
                    }
                }
            } catch {
                logger.warning("could not renew the sessions' leases", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Calls `body` with each session whose lease expired while this syncd could not renew it
    /// (etcd was out of reach for longer than the TTL): every host has seen its ephemeral keys
    /// deleted. The daemon closes that session's connection, so its client reconnects and puts
    /// its presence back, as after a restart of syncd.
    func whenASessionLosesItsLease(_ body: @escaping @Sendable (UInt64) -> Void) {
        leaseLost.withLock { $0 = body }
    }

    /// Revokes the leases the ledger holds: those of the syncd that ran here before, which was
    /// killed before it could revoke them. Their sessions are gone, and so go their ephemeral
    /// keys, before this syncd reads the state. A lease etcd cannot be asked to revoke stays in
    /// the ledger (and its keys go when it expires).
    func revokeLeasesOfPreviousRun() async {
        guard let ledger = configuration.ledger else { return }
        let previous: [Int64]
        do {
            previous = try ledger.read()
        } catch {
            logger.warning("ignoring the ledger of the previous run's leases", metadata: ["error": "\(error)"])
            previous = []
        }
        guard !previous.isEmpty else { return }
        var kept: [Int64] = []
        for id in previous {
            do {
                try await client.revokeLease(id)
            } catch {
                kept.append(id)
                logger.warning(
                    "could not revoke a lease of the previous run; its keys go when it expires",
                    metadata: ["lease": "\(id)", "error": "\(error)"])
            }
        }
        logger.notice(
            "revoked the leases the previous syncd left behind; their ephemeral keys are deleted",
            metadata: ["leases": "\(previous.count - kept.count)", "ledger": "\(ledger.path)"])
        write(kept, to: ledger)
    }

    /// Records the leases held now in the ledger.
    func recordLeases() {
        guard let ledger = configuration.ledger else { return }
        ledgerWrites.withLock { _ in
            write(leases.withLock { $0.leases }, to: ledger)
        }
    }

    /// Writes `leases` to `ledger`; a failure is logged (if this syncd is then killed, its
    /// sessions' keys go when their leases expire).
    private func write(_ leases: [Int64], to ledger: LeaseLedger) {
        do {
            try ledger.write(leases)
        } catch {
            logger.warning("could not record the sessions' leases", metadata: ["ledger": "\(ledger.path)", "error": "\(error)"])
        }
    }

    /// The session an ephemeral entry belongs to: this host's, for a lease one of its sessions
    /// holds; the lease's id for another host's.
    func session(ofLease lease: Int64) -> UInt64 {
        guard lease != 0 else { return 0 }
        return leases.withLock { $0.session(of: lease) } ?? UInt64(bitPattern: lease)
    }
}

/// Which lease each session holds.
package struct SessionLeases: Sendable {
    private var bySession: [UInt64: Int64] = [:]
    private var byLease: [Int64: UInt64] = [:]

    func lease(of session: UInt64) -> Int64? { bySession[session] }
    func session(of lease: Int64) -> UInt64? { byLease[lease] }
    var leases: [Int64] { Array(byLease.keys) }
    var sessions: [UInt64] { Array(bySession.keys) }

    mutating func bind(_ session: UInt64, to lease: Int64) {
        bySession[session] = lease
        byLease[lease] = session
    }

    /// Removes a session's lease; returns it.
    mutating func unbind(_ session: UInt64) -> Int64? {
        guard let lease = bySession.removeValue(forKey: session) else { return nil }
        byLease[lease] = nil
        return lease
    }

    /// Removes a lease that expired; returns its session.
    mutating func forget(lease: Int64) -> UInt64? {
        guard let session = byLease.removeValue(forKey: lease) else { return nil }
        bySession[session] = nil
        return session
    }
}
