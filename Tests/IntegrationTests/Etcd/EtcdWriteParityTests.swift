import EtcdClient
import Foundation
import SharedStateWire
import TestSupport
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

/// syncd's write semantics, one to one, on etcd: the same requests, planned by syncd's own
/// `WritePlanner` and run on a real cluster as `EtcdWrite` transactions, give the same outcomes
/// (errors with their messages too) and leave the same entries, with etcd's revisions in place
/// of syncd's.
@Suite(.timeLimit(.minutes(2)))
struct EtcdWriteParityTests {
    @Test(.enabled(if: EtcdCluster.isEnabled))
    func requestsDoOnEtcdWhatTheyDoInSyncd() async throws {
        let space = try EtcdKeySpace(prefix: "/parity/")
        // What etcd answers is the test, not how soon: the etcd suites share two cores.
        try await withEtcd(size: 1, callTimeout: .seconds(30)) { cluster, etcd in
            var model = PlannerModel()
            var generator = SeededGenerator(seed: 0x5eed_e7cd)
            let requests = Self.scripted + (0..<400).map { _ in Self.randomRequest(&generator) }
            for (index, request) in requests.enumerated() {
                let expected = model.apply(request)
                let actual: Result<WriteOutcome, SharedStateError>
                do {
                    let write = try EtcdWrite(request, in: space, lease: { _ in 0 })
                    actual = .success(try write.outcome(try await etcd.transaction(write.transaction)))
                } catch let error as SharedStateError {
                    actual = .failure(error)
                } catch {
                    let log = cluster.processes.compactMap { $0?.stderr.suffix(6_000) }.joined()
                    throw TestFailure("#\(index) \(request): \(error)\n\(log)")
                }
                try model.match(actual, expected, request: "#\(index): \(request)")
            }
            let read = try await etcd.range(key: space.range.key, rangeEnd: space.range.end)
            let entries = read.entries.map { entry in
                Entry(
                    key: space.key(entry.key) ?? "?", value: entry.value, version: UInt64(entry.version),
                    createRevision: model.syncdRevision(of: entry.createRevision),
                    modRevision: model.syncdRevision(of: entry.modRevision))
            }
            #expect(entries == model.entries.values.sorted { KeyByteOrder.precedes($0.key, $1.key) })
        }
    }

    /// One request for each row of `EtcdWrite`'s table, and each way it can fail.
    static let scripted: [WriteRequest] = [
        .put(key: "a", value: json(1), ifVersion: nil),
        .put(key: "a", value: json(2), ifVersion: 1),
        .put(key: "a", value: json(3), ifVersion: 1),  // conflict: at version 2
        .put(key: "b", value: json(1), ifVersion: 0),
        .put(key: "b", value: json(1), ifVersion: 0),  // conflict: exists
        .delete(key: "missing", ifVersion: nil),  // notFound
        .delete(key: "missing", ifVersion: 0),  // notFound
        .delete(key: "b", ifVersion: 3),  // conflict
        .delete(key: "b", ifVersion: 1),
        .transaction(
            compares: [.init(key: "a", target: .version(2))],
            onSuccess: [.put(key: "c", value: json(1), ifVersion: nil), .delete(key: "missing", ifVersion: nil)],
            onFailure: []),
        .transaction(compares: [.init(key: "a", target: .value(json(9)))], onSuccess: [], onFailure: [.delete(key: "c", ifVersion: nil)]),
        .transaction(compares: [], onSuccess: [.put(key: "a", value: json(4), ifVersion: 7)], onFailure: []),  // conflict inside
        .transaction(
            compares: [], onSuccess: [.put(key: "a", value: json(5), ifVersion: 2), .put(key: "d", value: json(1), ifVersion: 0)],
            onFailure: []),
        // One key twice in a branch.
        .transaction(
            compares: [], onSuccess: [.put(key: "a", value: json(1), ifVersion: nil), .delete(key: "a", ifVersion: nil)], onFailure: []),
        .transaction(compares: [.init(key: "nothing", target: .version(0))], onSuccess: [], onFailure: []),  // changes nothing
        .restore(entries: []),
    ]

    static func json(_ number: Int) -> Data { Data("\(number)".utf8) }

    static func randomRequest(_ generator: inout SeededGenerator) -> WriteRequest {
        let keys = ["a", "b", "c", "d/e"]
        func key() -> String { keys[Int(generator.next() % UInt64(keys.count))] }
        func version() -> UInt64? { generator.next() % 3 == 0 ? nil : generator.next() % 4 }
        func value() -> Data { json(Int(generator.next() % 5)) }
        func operation() -> WriteRequest.WriteOperation {
            generator.next() % 3 == 0 ? .delete(key: key(), ifVersion: version()) : .put(key: key(), value: value(), ifVersion: version())
        }
        switch generator.next() % 5 {
        case 0, 1: return .put(key: key(), value: value(), ifVersion: version())
        case 2: return .delete(key: key(), ifVersion: version())
        default:
            let compares = (0..<generator.next() % 3).map { _ in
                WriteRequest.Compare(key: key(), target: generator.next() % 2 == 0 ? .version(generator.next() % 4) : .value(value()))
            }
            return .transaction(
                compares: compares, onSuccess: (0..<generator.next() % 3).map { _ in operation() },
                onFailure: (0..<generator.next() % 2).map { _ in operation() })
        }
    }
}

/// syncd's planner over a table in memory: what the engine would do, without storage.
struct PlannerModel {
    var entries: [String: Entry] = [:]
    var revision: UInt64 = 0
    /// etcd's revision of each of syncd's revisions, learnt as outcomes match.
    private var etcdRevisions: [Int64: UInt64] = [:]

    mutating func apply(_ request: WriteRequest) -> Result<WriteOutcome, SharedStateError> {
        do {
            let plan = try WritePlanner.plan(request, revision: revision + 1) { entries[$0] }
            if !plan.changes.isEmpty {
                revision += 1
                for change in plan.changes { entries[change.key] = change.type == .put ? change.entry : nil }
            }
            return .success(plan.outcome)
        } catch {
            return .failure(error)
        }
    }

    /// Checks etcd's `actual` outcome against syncd's `expected`, learning which etcd revision
    /// stands for which of syncd's.
    mutating func match(
        _ actual: Result<WriteOutcome, SharedStateError>, _ expected: Result<WriteOutcome, SharedStateError>, request: String
    ) throws {
        switch (actual, expected) {
        case (.failure(let actual), .failure(let expected)):
            guard actual.code == expected.code, actual.message == expected.message else {
                throw TestFailure("\(request): etcd failed with \(actual), syncd with \(expected)")
            }
        case (.success(let actual), .success(let expected)):
            let (actualRevision, expectedRevision) = (Self.revision(of: actual), Self.revision(of: expected))
            if let known = etcdRevisions[Int64(actualRevision)] {
                guard known == expectedRevision else {
                    throw TestFailure("\(request): etcd revision \(actualRevision) is syncd's \(known), not \(expectedRevision)")
                }
            } else {
                etcdRevisions[Int64(actualRevision)] = expectedRevision
            }
            guard Self.withoutRevision(actual) == Self.withoutRevision(expected) else {
                throw TestFailure("\(request): etcd did \(actual), syncd \(expected)")
            }
        default:
            // The restore is refused on etcd, by design: the one request whose outcomes differ.
            if case .failure(let error) = actual, error.message.contains("etcdctl snapshot restore") { return }
            throw TestFailure("\(request): etcd gave \(actual), syncd \(expected)")
        }
    }

    func syncdRevision(of etcdRevision: Int64) -> UInt64 { etcdRevisions[etcdRevision] ?? .max }

    private static func revision(of outcome: WriteOutcome) -> UInt64 {
        switch outcome {
        case .put(let revision, _), .delete(let revision), .transaction(_, let revision), .expired(let revision),
            .restored(let revision, _, _):
            revision
        }
    }

    private static func withoutRevision(_ outcome: WriteOutcome) -> WriteOutcome {
        switch outcome {
        case .put(_, let version): .put(revision: 0, version: version)
        case .delete: .delete(revision: 0)
        case .transaction(let succeeded, _): .transaction(succeeded: succeeded, revision: 0)
        case .expired: .expired(revision: 0)
        case .restored(_, let puts, let deletes): .restored(revision: 0, puts: puts, deletes: deletes)
        }
    }
}
