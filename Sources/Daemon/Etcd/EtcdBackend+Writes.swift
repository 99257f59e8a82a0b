import EtcdClient
import Foundation
import SharedStateWire
import SyncEngine
import Synchronization

/// Writes: each session's in order, one etcd transaction each (sent in groups when several
/// sessions write at once, see ``EtcdGroupCommit``), answered once reported.
package extension EtcdBackend {
    func forward(_ writes: some Collection<PendingWrite>, answer: @escaping Answer) -> Bool {
        guard let first = writes.first else { return true }
        // The writes submitted together come from one session, or are syncd's own.
        let lane = first.origin.writer?.session ?? 0
        guard let start = lanes.withLock({ $0.add(writes.map { .write($0, answer: answer) }, to: lane, evenWhenClosed: false) }) else {
            return false
        }
        if start { drain(lane) }
        return true
    }

    func endSession(_ session: UInt64) {
        // After the session's writes: an ephemeral put still waiting would otherwise outlive it.
        if lanes.withLock({ $0.add([.endSession(session)], to: session, evenWhenClosed: true) }) == true {
            drain(session)
        }
    }

    /// Runs a lane's items one after the other until it is empty.
    private func drain(_ lane: UInt64) {
        Task {
            while let item = lanes.withLock({ $0.next(in: lane) }) {
                switch item {
                case .write(let pending, let answer):
                    answer(pending, await perform(pending.request))
                case .endSession(let session):
                    await revokeLease(of: session)
                }
            }
        }
    }

    /// Sends `request` to etcd as one transaction, and waits until the revision it made, if it
    /// made one, has been reported (and so published by the engine).
    ///
    /// A write that changed nothing (a transaction whose branch has no operations) is answered at
    /// once, with the revision last reported when etcd's is newer: etcd's may be another
    /// group member's, or another host's, not yet published here, and an answer never carries a
    /// revision whose events this host has not sent its watchers.
    private func perform(_ request: WriteRequest) async -> Result<WriteOutcome, SharedStateError> {
        do throws(SharedStateError) {
            var leaseIDs: [UInt64: Int64] = [:]
            for session in Self.ephemeralSessions(in: request) {
                leaseIDs[session] = try await lease(for: session)
            }
            let write = try EtcdWrite(request, in: space, lease: { leaseIDs[$0] ?? 0 })
            var etcd: EtcdTransaction.Outcome
            do {
                etcd = try await groupCommit.run(write.transaction)
            } catch {
                throw Self.writeFailure(error)
            }
            let madeRevision = Self.madeRevision(etcd)
            if !madeRevision { etcd.revision = min(etcd.revision, Int64(reported.withLock { $0.revision })) }
            let outcome = try write.outcome(etcd)
            if madeRevision { await waitUntilPublished(UInt64(etcd.revision)) }
            return .success(outcome)
        } catch {
            return .failure(error)
        }
    }

    /// Waits until `revision` has been reported.
    private func waitUntilPublished(_ revision: UInt64) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waiting = reported.withLock { $0.wait(for: revision) { continuation.resume() } }
            if !waiting { continuation.resume() }
        }
    }

    /// Waits until every lane is empty, once no more writes are taken.
    func waitForWrites() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            if !lanes.withLock({ $0.whenDrained { continuation.resume() } }) { continuation.resume() }
        }
    }

    /// Whether the branch etcd ran wrote something, and so made a revision.
    static func madeRevision(_ outcome: EtcdTransaction.Outcome) -> Bool {
        outcome.results.contains { result in
            switch result {
            case .put: true
            case .delete(let deleted): !deleted.isEmpty
            case .range: false
            case .transaction(let nested): madeRevision(nested)
            }
        }
    }

    /// The sessions `request` puts ephemeral keys for.
    static func ephemeralSessions(in request: WriteRequest) -> Set<UInt64> {
        switch request {
        case .put(_, _, _, let session): session == 0 ? [] : [session]
        case .transaction(_, let onSuccess, let onFailure):
            Set(
                (onSuccess + onFailure).compactMap { operation in
                    if case .put(_, _, _, let session) = operation, session != 0 { return session }
                    return nil
                })
        default: []
        }
    }

    /// A failed write as syncd reports it.
    static func writeFailure(_ error: EtcdError) -> SharedStateError {
        switch error {
        case .unavailable(let message, let outcomeUnknown):
            SharedStateError(
                .unavailable,
                outcomeUnknown
                    ? "etcd stopped answering after the write was sent; it may or may not have been applied (\(message))"
                    : "etcd is unreachable; the write was not applied (\(message))")
        case .refused(_, let message):
            SharedStateError(.invalidArgument, "etcd refused the write: \(message)")
        default:
            SharedStateError(.unavailable, "etcd: \(error)")
        }
    }
}

/// The writes waiting in each lane (a session's, or syncd's own, 0), run one at a time per lane.
package struct WriteLanes: Sendable {
    enum Item: Sendable {
        case write(PendingWrite, answer: WriteForwarder.Answer)
        case endSession(UInt64)
    }

    /// The lanes with work; a lane is here while a task runs it.
    private var lanes: [UInt64: [Item]] = [:]
    private var isClosed = false
    private var drained: (@Sendable () -> Void)?

    /// Adds items to a lane; returns whether a task must start for it, or nil when closed.
    mutating func add(_ items: [Item], to lane: UInt64, evenWhenClosed: Bool) -> Bool? {
        if isClosed && !evenWhenClosed { return nil }
        if lanes[lane] != nil {
            lanes[lane]!.append(contentsOf: items)
            return false
        }
        lanes[lane] = items
        return true
    }

    /// The next item of a lane; nil, ending the lane, when it has none.
    mutating func next(in lane: UInt64) -> Item? {
        if let item = lanes[lane]?.first {
            lanes[lane]!.removeFirst()
            return item
        }
        lanes[lane] = nil
        if lanes.isEmpty, isClosed, let drained {
            self.drained = nil
            drained()
        }
        return nil
    }

    /// Takes no more writes.
    mutating func close() {
        isClosed = true
    }

    /// Calls `action` once every lane is empty; returns false when they already are.
    mutating func whenDrained(_ action: @escaping @Sendable () -> Void) -> Bool {
        guard !lanes.isEmpty else { return false }
        drained = action
        return true
    }
}

/// The revision last reported to the engine, which has published it by then, and the writes
/// waiting for one.
package struct ReportedRevision: Sendable {
    var revision: UInt64 = 0
    private var waiting: [(revision: UInt64, resume: @Sendable () -> Void)] = []
    /// Set at shutdown: nothing waits any more.
    private var isReleased = false

    /// Calls `resume` once `target` is reported; returns false when it already is, or when
    /// nothing may wait any more.
    mutating func wait(for target: UInt64, resume: @escaping @Sendable () -> Void) -> Bool {
        guard target > revision, !isReleased else { return false }
        waiting.append((target, resume))
        return true
    }

    /// Lets nothing wait any more; returns what waited, to call. At shutdown: a committed write
    /// is answered even if its revision never comes back (etcd gone), rather than holding
    /// syncd's exit.
    mutating func release() -> [@Sendable () -> Void] {
        isReleased = true
        defer { waiting = [] }
        return waiting.map(\.resume)
    }

    /// Records that `reported` was reported; returns what waited for it, to call.
    mutating func advance(to reported: UInt64) -> [@Sendable () -> Void] {
        revision = max(revision, reported)
        guard !waiting.isEmpty else { return [] }
        var ready: [@Sendable () -> Void] = []
        waiting.removeAll { waiter in
            guard waiter.revision <= reported else { return false }
            ready.append(waiter.resume)
            return true
        }
        return ready
    }
}
