import EtcdClient
import Foundation
import SharedStateWire

/// A syncd write request as etcd runs it, and how to read etcd's answer as syncd's.
///
/// Each request becomes one etcd transaction, so etcd decides its compares and its revision,
/// once, whichever host sent it:
///
/// | syncd | etcd |
/// | --- | --- |
/// | `put` | `Txn { success: put }`; the version is the previous entry's plus one |
/// | `put` with `ifVersion: N` | `Txn { version(key) == N ? put : range(key) }` (N = 0: must not exist) |
/// | `delete` | `Txn { version(key) > 0 ? delete : — }`; a failed compare is `notFound` |
/// | `delete` with `ifVersion: N` | `Txn { version(key) == N ? delete : range(key) }` |
/// | `transaction` | `Txn { compares ? success : failure }`; a branch whose operations carry `ifVersion` is a nested `Txn` whose failure is `conflict` |
/// | ephemeral `put` | the put bound to the writing session's lease |
/// | the end of a session | the revocation of its lease: etcd deletes its keys at one revision |
///
/// A restore is refused: an etcd cluster is restored with `etcdctl snapshot restore`.
package struct EtcdWrite: Sendable {
    /// What is sent.
    let transaction: EtcdTransaction
    private let reading: @Sendable (EtcdTransaction.Outcome) throws(SharedStateError) -> WriteOutcome

    /// syncd's outcome of the request, from what etcd did.
    func outcome(_ etcd: EtcdTransaction.Outcome) throws(SharedStateError) -> WriteOutcome {
        try reading(etcd)
    }

    /// `request` as an etcd transaction; `lease` gives the etcd lease of an ephemeral session.
    ///
    /// - Throws: `invalidArgument` for a transaction that writes a key twice in one branch, and for
    ///   requests etcd does not take this way (restores, and session ends: revoke the lease).
    init(_ request: WriteRequest, in space: EtcdKeySpace, lease: (UInt64) -> Int64) throws(SharedStateError) {
        switch request {
        case .put(let key, let value, let ifVersion, let session):
            let put = EtcdTransaction.Operation.put(key: space.etcdKey(key), value: value, lease: session == 0 ? 0 : lease(session))
            guard let ifVersion else {
                transaction = EtcdTransaction(success: [put])
                reading = { etcd throws(SharedStateError) in
                    guard case .put(let previous) = etcd.results.first else { throw Self.unexpected(etcd) }
                    return .put(revision: UInt64(etcd.revision), version: UInt64((previous?.version ?? 0) + 1))
                }
                return
            }
            transaction = EtcdTransaction(
                compares: [.init(key: space.etcdKey(key), .version(Int64(ifVersion)))], success: [put],
                failure: [.range(key: space.etcdKey(key))])
            reading = { etcd throws(SharedStateError) in
                guard etcd.succeeded else { throw Self.conflict(key, expected: ifVersion, etcd.results.first) }
                return .put(revision: UInt64(etcd.revision), version: ifVersion + 1)
            }

        case .delete(let key, let ifVersion):
            let etcdKey = space.etcdKey(key)
            if let ifVersion {
                transaction = EtcdTransaction(
                    compares: [.init(key: etcdKey, .version(Int64(ifVersion)))], success: [.delete(key: etcdKey)],
                    failure: [.range(key: etcdKey)])
            } else {
                transaction = EtcdTransaction(
                    compares: [.init(key: etcdKey, .version(0), .greater)], success: [.delete(key: etcdKey)])
            }
            reading = { etcd throws(SharedStateError) in
                guard etcd.succeeded else {
                    guard let ifVersion else { throw RequestRules.notFound(key) }
                    throw Self.conflict(key, expected: ifVersion, etcd.results.first)
                }
                // `ifVersion: 0` holds for a key that does not exist, which is then not there to delete.
                guard case .delete(let deleted) = etcd.results.first, !deleted.isEmpty else { throw RequestRules.notFound(key) }
                return .delete(revision: UInt64(etcd.revision))
            }

        case .transaction(let compares, let onSuccess, let onFailure):
            try WritePlanner.checkBranches(onSuccess, onFailure)
            let success = Self.branch(onSuccess, in: space, lease: lease)
            let failure = Self.branch(onFailure, in: space, lease: lease)
            transaction = EtcdTransaction(
                compares: compares.map { compare in
                    switch compare.target {
                    case .version(let version): .init(key: space.etcdKey(compare.key), .version(Int64(version)))
                    case .value(let value): .init(key: space.etcdKey(compare.key), .value(value))
                    }
                },
                success: success.operations, failure: failure.operations)
            reading = { etcd throws(SharedStateError) in
                let checked = etcd.succeeded ? success.checked : failure.checked
                if !checked.isEmpty {
                    guard case .transaction(let nested) = etcd.results.first else { throw Self.unexpected(etcd) }
                    if !nested.succeeded {
                        // The first operation whose version differs names the conflict.
                        for (index, (key, expected)) in checked.enumerated() {
                            guard index < nested.results.count, case .range(let entries) = nested.results[index] else { continue }
                            if (entries.first?.version ?? 0) != Int64(expected) {
                                throw Self.conflict(key, expected: expected, nested.results[index])
                            }
                        }
                        throw SharedStateError(.conflict, "a key of the transaction changed its version")
                    }
                }
                return .transaction(succeeded: etcd.succeeded, revision: UInt64(etcd.revision))
            }

        case .expireEphemeral:
            throw SharedStateError(.invalidArgument, "a session's ephemeral keys end with its etcd lease, not a transaction")
        case .restore:
            throw SharedStateError(
                .invalidArgument, "syncd cannot restore a backup into etcd; restore the cluster with `etcdctl snapshot restore`")
        }
    }

    /// A branch's operations; when some carry `ifVersion`, one nested transaction that applies
    /// them only if every such version holds, and otherwise reads those keys. `checked` names
    /// them with the version each expects, in the order of those reads.
    private static func branch(
        _ operations: [WriteRequest.WriteOperation], in space: EtcdKeySpace, lease: (UInt64) -> Int64
    ) -> (operations: [EtcdTransaction.Operation], checked: [(key: String, version: UInt64)]) {
        var checked: [(key: String, version: UInt64)] = []
        let etcdOperations = operations.map { operation -> EtcdTransaction.Operation in
            switch operation {
            case .put(let key, let value, let ifVersion, let session):
                if let ifVersion { checked.append((key, ifVersion)) }
                return .put(key: space.etcdKey(key), value: value, lease: session == 0 ? 0 : lease(session))
            case .delete(let key, let ifVersion):
                if let ifVersion { checked.append((key, ifVersion)) }
                return .delete(key: space.etcdKey(key))
            }
        }
        guard !checked.isEmpty else { return (etcdOperations, []) }
        let nested = EtcdTransaction(
            compares: checked.map { .init(key: space.etcdKey($0.key), .version(Int64($0.version))) },
            success: etcdOperations,
            failure: checked.map { .range(key: space.etcdKey($0.key)) })
        return ([.transaction(nested)], checked)
    }

    private static func conflict(_ key: String, expected: UInt64, _ read: EtcdTransaction.Result?) -> SharedStateError {
        var version: Int64 = 0
        if case .range(let entries) = read { version = entries.first?.version ?? 0 }
        return WritePlanner.versionConflict(key: key, expected: expected, actual: UInt64(version))
    }

    private static func unexpected(_ etcd: EtcdTransaction.Outcome) -> SharedStateError {
        SharedStateError(.unavailable, "etcd answered a transaction in a shape syncd did not expect: \(etcd)")
    }
}
