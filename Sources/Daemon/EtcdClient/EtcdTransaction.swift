import Foundation

/// A transaction as etcd runs it: if every compare holds, the success operations, otherwise the
/// failure ones, all at one revision.
public struct EtcdTransaction: Sendable, Equatable {
    /// A condition on one key's entry. A key that does not exist has version, create revision
    /// and mod revision 0.
    public struct Compare: Sendable, Equatable {
        public enum Target: Sendable, Equatable {
            case version(Int64)
            case createRevision(Int64)
            case modRevision(Int64)
            case value(Data)
            case lease(Int64)
        }

        public enum Relation: Sendable, Equatable { case equal, notEqual, less, greater }

        public var key: Data
        public var target: Target
        public var relation: Relation

        public init(key: Data, _ target: Target, _ relation: Relation = .equal) {
            self.key = key
            self.target = target
            self.relation = relation
        }
    }

    /// One operation of a branch.
    public enum Operation: Sendable, Equatable {
        /// Writes `value` to `key`, bound to `lease` (0: none). The result carries the key's entry
        /// before it.
        case put(key: Data, value: Data, lease: Int64 = 0)
        /// Deletes `key`, or with `rangeEnd` every key in `[key, rangeEnd)`. The result carries
        /// the entries it deleted.
        case delete(key: Data, rangeEnd: Data? = nil)
        /// Reads `key`, or with `rangeEnd` every key in `[key, rangeEnd)`.
        case range(key: Data, rangeEnd: Data? = nil)
        /// A transaction inside this one, at the same revision: its compares see the state as
        /// this transaction's compares did.
        indirect case transaction(EtcdTransaction)
    }

    public var compares: [Compare]
    public var success: [Operation]
    public var failure: [Operation]

    public init(compares: [Compare] = [], success: [Operation], failure: [Operation] = []) {
        self.compares = compares
        self.success = success
        self.failure = failure
    }

    /// What a transaction did.
    public struct Outcome: Sendable, Equatable {
        /// Whether every compare held, so the success branch ran.
        public var succeeded: Bool
        /// The cluster's revision after the transaction: its own, when it wrote something.
        public var revision: Int64
        /// One result per operation of the branch that ran, in order.
        public var results: [Result]
    }

    /// The result of one operation.
    public enum Result: Sendable, Equatable {
        /// A put: the key's entry before it, if there was one.
        case put(previous: EtcdKeyValue?)
        /// A delete: the entries it deleted.
        case delete(deleted: [EtcdKeyValue])
        /// A read: the entries found.
        case range(entries: [EtcdKeyValue])
        /// A nested transaction: what it did.
        indirect case transaction(Outcome)
    }

    var wireValue: Etcdserverpb_TxnRequest {
        .with {
            $0.compare = compares.map(\.wireValue)
            $0.success = success.map(\.wireValue)
            $0.failure = failure.map(\.wireValue)
        }
    }
}

extension EtcdTransaction.Compare {
    var wireValue: Etcdserverpb_Compare {
        .with {
            $0.key = key
            switch target {
            case .version(let version):
                $0.target = .version
                $0.version = version
            case .createRevision(let revision):
                $0.target = .create
                $0.createRevision = revision
            case .modRevision(let revision):
                $0.target = .mod
                $0.modRevision = revision
            case .value(let value):
                $0.target = .value
                $0.value = value
            case .lease(let lease):
                $0.target = .lease
                $0.lease = lease
            }
            $0.result =
                switch relation {
                case .equal: .equal
                case .notEqual: .notEqual
                case .less: .less
                case .greater: .greater
                }
        }
    }
}

extension EtcdTransaction.Operation {
    var wireValue: Etcdserverpb_RequestOp {
        .with {
            switch self {
            case .put(let key, let value, let lease):
                $0.requestPut = .with {
                    $0.key = key
                    $0.value = value
                    $0.lease = lease
                    $0.prevKv = true
                }
            case .delete(let key, let rangeEnd):
                $0.requestDeleteRange = .with {
                    $0.key = key
                    if let rangeEnd { $0.rangeEnd = rangeEnd }
                    $0.prevKv = true
                }
            case .range(let key, let rangeEnd):
                $0.requestRange = .with {
                    $0.key = key
                    if let rangeEnd { $0.rangeEnd = rangeEnd }
                }
            case .transaction(let nested):
                $0.requestTxn = nested.wireValue
            }
        }
    }
}

extension EtcdTransaction.Outcome {
    init(_ wire: Etcdserverpb_TxnResponse) {
        self.init(
            succeeded: wire.succeeded, revision: wire.header.revision,
            results: wire.responses.map { response in
                switch response.response {
                case .responsePut(let put): .put(previous: put.hasPrevKv ? EtcdKeyValue(put.prevKv) : nil)
                case .responseDeleteRange(let delete): .delete(deleted: delete.prevKvs.map(EtcdKeyValue.init))
                case .responseRange(let range): .range(entries: range.kvs.map(EtcdKeyValue.init))
                case .responseTxn(let nested): .transaction(EtcdTransaction.Outcome(nested))
                case nil: .range(entries: [])
                }
            })
    }
}
