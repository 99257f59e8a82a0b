import Foundation
import Synchronization

/// Sends transactions to etcd several at once when they arrive together (group commit): the
/// transactions that arrive while others are on their way go as the nested transactions of one,
/// which costs one call, one Raft entry and one revision where each alone costs its own.
///
/// A transaction waits only while ``Limits/maxInFlight`` groups are on their way; otherwise it
/// goes at once, as it is, so a lone write is as fast as without this. One on a key that a
/// group on its way touches goes at once too (see ``GroupCommitQueue/arrive(_:_:)``).
///
/// Grouping keeps each transaction's meaning because a group only holds transactions that touch
/// pairwise different keys. etcd evaluates every compare of a transaction, nested ones too,
/// before it applies any operation, and refuses a transaction that writes one key twice; with
/// disjoint keys, running the group is the same as running its transactions one after the
/// other, in any order. What a group cannot hold (a transaction over a range of keys, or one too
/// large) goes alone. The transactions of a group share its revision.
///
/// When etcd refuses a group (one of its transactions is malformed, or the group is larger than
/// the cluster's `--max-request-bytes`), each transaction is sent again alone, so that only the
/// one at fault fails. Any other failure is every member's.
public final class EtcdGroupCommit: Sendable {
    /// How large groups grow, and how many are on their way at once.
    public struct Limits: Sendable {
        /// Groups on their way to etcd at once; a transaction waits only while this many are. One
        /// makes the largest groups: with 16 writers on distinct keys, 1 gave 4,500–5,200 puts/s
        /// through syncd and 2 gave 4,000–4,500, where etcd alone took 3,500–4,000
        /// (`scripts/bench-etcd.sh`).
        public var maxInFlight = 1
        /// Transactions in one group. etcd takes at most 128 operations on one level of a
        /// transaction (`--max-txn-ops`), counting a nested one's against what is left.
        public var maxMembers = 64
        /// Bytes of keys and values in one group, well below etcd's default request limit of
        /// 1.5 MiB.
        public var maxBytes = 512 * 1024

        public init() {}
    }

    private enum Turn: Sendable {
        case done(Result<EtcdTransaction.Outcome, EtcdError>)
        /// Send this group, whose first member is the one told.
        case lead(GroupCommitQueue<Member>.Group)
    }

    private struct Member: Sendable {
        var transaction: EtcdTransaction
        var turn: CheckedContinuation<Turn, Never>
    }

    private let client: EtcdClient
    private let queue: Mutex<GroupCommitQueue<Member>>

    public init(client: EtcdClient, limits: Limits = Limits()) {
        self.client = client
        self.queue = Mutex(GroupCommitQueue(limits: limits))
    }

    /// Runs `transaction`, alone or in a group, and returns what etcd did with it. When it ran in
    /// a group, `revision` is the group's.
    public func run(_ transaction: EtcdTransaction) async throws(EtcdError) -> EtcdTransaction.Outcome {
        let footprint = GroupCommitFootprint(transaction)
        let turn = await withCheckedContinuation { (continuation: CheckedContinuation<Turn, Never>) in
            let group = queue.withLock { $0.arrive(Member(transaction: transaction, turn: continuation), footprint) }
            if let group { group.members[0].turn.resume(returning: .lead(group)) }
        }
        switch turn {
        case .done(let result):
            return try result.get()
        case .lead(let group):
            let results = await send(group.members)
            for (member, result) in zip(group.members, results).dropFirst() { member.turn.resume(returning: .done(result)) }
            if let next = queue.withLock({ $0.finished(group) }) { next.members[0].turn.resume(returning: .lead(next)) }
            return try results[0].get()
        }
    }

    /// Sends a group; one result per member, in order.
    private func send(_ group: [Member]) async -> [Result<EtcdTransaction.Outcome, EtcdError>] {
        if group.count == 1 { return [await alone(group[0].transaction)] }
        let outer = EtcdTransaction(success: group.map { .transaction($0.transaction) })
        let outcome: EtcdTransaction.Outcome
        do {
            outcome = try await client.transaction(outer)
        } catch .refused {
            var results: [Result<EtcdTransaction.Outcome, EtcdError>] = []
            for member in group { results.append(await alone(member.transaction)) }
            return results
        } catch {
            return Array(repeating: .failure(error), count: group.count)
        }
        guard outcome.succeeded, outcome.results.count == group.count else {
            let failure = EtcdError.unavailable(
                "etcd answered a group of \(group.count) transactions with \(outcome.results.count) results", outcomeUnknown: true)
            return Array(repeating: .failure(failure), count: group.count)
        }
        return outcome.results.map { result in
            guard case .transaction(let nested) = result else {
                return .failure(.unavailable("etcd answered a nested transaction with \(result)", outcomeUnknown: true))
            }
            // A nested transaction's own header carries no revision: the group's is its.
            return .success(EtcdTransaction.Outcome(succeeded: nested.succeeded, revision: outcome.revision, results: nested.results))
        }
    }

    private func alone(_ transaction: EtcdTransaction) async -> Result<EtcdTransaction.Outcome, EtcdError> {
        do {
            return .success(try await client.transaction(transaction))
        } catch {
            return .failure(error)
        }
    }
}

/// What a transaction touches, for ``GroupCommitQueue`` to tell whether it may share a group.
struct GroupCommitFootprint: Sendable, Equatable {
    /// Every key it compares, reads or writes.
    var keys: Set<Data>
    /// Its keys' and values' bytes.
    var bytes: Int
    /// False for what must go alone: an operation over a range of keys, more than
    /// ``maxOperations`` on a level, or more than ``maxBytes``.
    var isGroupable: Bool

    /// The most compares, or operations of one branch, a transaction of a group has on any level.
    static let maxOperations = 16
    /// The most bytes a transaction of a group has.
    static let maxBytes = 64 * 1024

    init(_ transaction: EtcdTransaction) {
        keys = []
        bytes = 0
        isGroupable = true
        add(transaction)
        if bytes > Self.maxBytes { isGroupable = false }
    }

    private mutating func add(_ transaction: EtcdTransaction) {
        if max(transaction.compares.count, transaction.success.count, transaction.failure.count) > Self.maxOperations {
            isGroupable = false
        }
        for compare in transaction.compares {
            keys.insert(compare.key)
            bytes += compare.key.count
            if case .value(let value) = compare.target { bytes += value.count }
        }
        for operation in transaction.success + transaction.failure {
            switch operation {
            case .put(let key, let value, _):
                keys.insert(key)
                bytes += key.count + value.count
            case .delete(let key, let rangeEnd), .range(let key, let rangeEnd):
                keys.insert(key)
                bytes += key.count
                if rangeEnd != nil { isGroupable = false }
            case .transaction(let nested):
                add(nested)
            }
        }
    }
}

/// The transactions waiting to be sent, and which go together: the state of ``EtcdGroupCommit``,
/// apart so that its rules can be tested without etcd.
struct GroupCommitQueue<Member> {
    /// Transactions sent together, and the keys they touch.
    struct Group {
        var members: [Member]
        var keys: [Data]
        /// Whether it came from the queue, and so counts against ``EtcdGroupCommit/Limits/maxInFlight``.
        var isQueued: Bool
    }

    let limits: EtcdGroupCommit.Limits
    /// Groups from the queue on their way.
    private(set) var queuedInFlight = 0
    /// The keys of every group on its way, with how many groups touch each.
    private var keysInFlight: [Data: Int] = [:]
    private var waiting: [(member: Member, footprint: GroupCommitFootprint)] = []

    init(limits: EtcdGroupCommit.Limits) {
        self.limits = limits
    }

    /// How many wait.
    var waitingCount: Int { waiting.count }

    /// Adds a transaction; returns the group to send now, or nil when it waits for a group on its
    /// way to come back.
    ///
    /// A transaction on a key that a group on its way touches goes at once, alone: no group could
    /// take it beside another transaction on that key, so waiting would only serialize the writers
    /// of a busy key behind each other's round trips.
    mutating func arrive(_ member: Member, _ footprint: GroupCommitFootprint) -> Group? {
        if footprint.keys.contains(where: { keysInFlight[$0] != nil }) {
            return start(Group(members: [member], keys: Array(footprint.keys), isQueued: false))
        }
        waiting.append((member, footprint))
        guard queuedInFlight < limits.maxInFlight else { return nil }
        return takeGroup()
    }

    /// A group came back; returns the next group to send, if any transaction waits.
    mutating func finished(_ group: Group) -> Group? {
        for key in group.keys {
            if keysInFlight[key]! == 1 { keysInFlight[key] = nil } else { keysInFlight[key]! -= 1 }
        }
        if group.isQueued { queuedInFlight -= 1 }
        guard !waiting.isEmpty, queuedInFlight < limits.maxInFlight else { return nil }
        return takeGroup()
    }

    private mutating func start(_ group: Group) -> Group {
        for key in group.keys { keysInFlight[key, default: 0] += 1 }
        if group.isQueued { queuedInFlight += 1 }
        return group
    }

    /// The oldest waiting transaction with every later one that fits beside it: groupable, on keys
    /// no other member touches, within the group's limits. Those that do not fit keep their
    /// place for the next group, and so does every later one on their keys: on one key, the
    /// waiting transactions go in the order they came.
    private mutating func takeGroup() -> Group {
        let first = waiting.removeFirst()
        guard first.footprint.isGroupable else {
            return start(Group(members: [first.member], keys: Array(first.footprint.keys), isQueued: true))
        }
        var members = [first.member]
        var keys = first.footprint.keys
        var bytes = first.footprint.bytes
        var keysLeft = Set<Data>()
        var left: [(member: Member, footprint: GroupCommitFootprint)] = []
        for (index, candidate) in waiting.enumerated() {
            if members.count == limits.maxMembers {
                left.append(contentsOf: waiting[index...])
                break
            }
            let footprint = candidate.footprint
            if footprint.isGroupable, bytes + footprint.bytes <= limits.maxBytes, keys.isDisjoint(with: footprint.keys),
                keysLeft.isDisjoint(with: footprint.keys)
            {
                members.append(candidate.member)
                keys.formUnion(footprint.keys)
                bytes += footprint.bytes
            } else {
                left.append(candidate)
                keysLeft.formUnion(footprint.keys)
            }
        }
        waiting = left
        return start(Group(members: members, keys: Array(keys), isQueued: true))
    }
}

extension GroupCommitQueue.Group: Sendable where Member: Sendable {}
