import EtcdClient
import Foundation
import Synchronization
import Testing

/// The etcd client against a real 3-member cluster: transactions decided by etcd, watches with
/// previous entries, compaction, leases, and failover when the member in use is killed.
@Suite(.timeLimit(.minutes(2)))
struct EtcdClientTests {
    @Test func endpointsAreReadAsEtcdWritesThemAndBadOnesAreNamed() throws {
        #expect(try EtcdEndpoint(parsing: "http://127.0.0.1:2379") == EtcdEndpoint(host: "127.0.0.1", port: 2379))
        #expect(try EtcdEndpoint(parsing: "localhost:2379/") == EtcdEndpoint(host: "localhost", port: 2379))
        #expect(try EtcdEndpoint.list(parsing: "http://a:1, http://b:2").map(\.description) == ["http://a:1", "http://b:2"])
        #expect(throws: EtcdError.invalidEndpoint("https://a:1", "TLS endpoints are not supported; give the cluster's http:// client URLs"))
        {
            try EtcdEndpoint(parsing: "https://a:1")
        }
        #expect(throws: EtcdError.self) { try EtcdEndpoint(parsing: "http://a:99999") }
        #expect(throws: EtcdError.self) { try EtcdEndpoint(parsing: "nohost") }
        #expect(throws: EtcdError.self) { try EtcdEndpoint.list(parsing: " , ") }
    }

    @Test func aPrefixRangeEndsAfterItsLastKey() {
        #expect(EtcdKeyRange.end(ofPrefix: Data("a/".utf8)) == Data("a0".utf8))
        #expect(EtcdKeyRange.end(ofPrefix: Data([0x61, 0xff])) == Data([0x62]))
        #expect(EtcdKeyRange.end(ofPrefix: Data()) == Data([0]))
        #expect(EtcdKeyRange.end(ofPrefix: Data([0xff, 0xff])) == Data([0]))
    }

    @Test(.enabled(if: EtcdCluster.isEnabled))
    func transactionsWatchesLeasesAndCompaction() async throws {
        try await withEtcd { _, etcd in
            let key = Data("t/counter".utf8)

            // A compare on version 0 means "must not exist": the first create wins, the second fails.
            let create = EtcdTransaction(compares: [.init(key: key, .version(0))], success: [.put(key: key, value: Data("1".utf8))])
            let first = try await etcd.transaction(create)
            #expect(first.succeeded)
            #expect(first.results == [.put(previous: nil)])
            let second = try await etcd.transaction(create)
            #expect(!second.succeeded)
            #expect(second.revision == first.revision)

            let watch = etcd.watch(
                key: Data("t/".utf8), rangeEnd: EtcdKeyRange.end(ofPrefix: Data("t/".utf8)), startRevision: first.revision,
                previousEntries: true)
            var updates = watch.makeAsyncIterator()
            let update = EtcdTransaction(compares: [.init(key: key, .version(1))], success: [.put(key: key, value: Data("2".utf8))])
            let updated = try await etcd.transaction(update)
            #expect(updated.succeeded)
            guard case .put(let previous?) = updated.results.first else { throw TestFailure("no previous entry: \(updated)") }
            #expect(previous.version == 1 && previous.value == Data("1".utf8))

            var events: [EtcdEvent] = []
            while events.count < 2, let next = try await updates.next() {
                if case .events(let batch, _) = next { events += batch }
            }
            #expect(events.map(\.entry.modRevision) == [first.revision, updated.revision])
            #expect(events[1].previous?.value == Data("1".utf8))
            #expect(events[1].entry.version == 2 && events[1].entry.createRevision == first.revision)

            // A key bound to a lease goes when the lease is revoked, as one delete event.
            let lease = try await etcd.grantLease(ttl: 5)
            let remaining = try await etcd.keepAlive([lease])
            #expect((remaining[lease] ?? 0) > 0)
            let presence = try await etcd.transaction(
                EtcdTransaction(success: [.put(key: Data("t/presence".utf8), value: Data("true".utf8), lease: lease)]))
            try await etcd.revokeLease(lease)
            try await etcd.revokeLease(lease)  // gone already: not an error
            var deleted: EtcdEvent?
            while deleted == nil, let next = try await updates.next() {
                if case .events(let batch, _) = next { deleted = batch.first { $0.kind == .delete } }
            }
            #expect(deleted?.entry.key == Data("t/presence".utf8))
            #expect(deleted?.previous?.lease == lease)
            #expect((deleted?.entry.modRevision ?? 0) > presence.revision)

            let read = try await etcd.range(key: Data("t/".utf8), rangeEnd: EtcdKeyRange.end(ofPrefix: Data("t/".utf8)))
            #expect(read.entries.map { String(decoding: $0.value, as: UTF8.self) } == ["2"])

            // After a compaction, a watch from before it ends with the compacted revision.
            let status = try await etcd.status()
            #expect(status.leaderID != 0 && status.revision >= updated.revision)
            try await etcd.compact(revision: status.revision, physical: true)
            await #expect(throws: EtcdError.compacted(requested: first.revision, compactedRevision: status.revision)) {
                for try await _ in etcd.watch(key: key, startRevision: first.revision) {}
            }
            await #expect(throws: EtcdError.self) { _ = try await etcd.range(key: key, revision: first.revision) }
        }
    }

    @Test(.enabled(if: EtcdCluster.isEnabled))
    func killingTheMemberInUseMovesCallsAndTheWatchToTheNextWithNoGap() async throws {
        try await withEtcd { cluster, etcd in
            let key = Data("f/n".utf8)
            let start = try await etcd.status().revision + 1

            let seen = Mutex<[Int64]>([])
            let watcher = Task {
                for try await update in etcd.watch(key: key, startRevision: start) {
                    if case .events(let events, _) = update {
                        seen.withLock { $0 += events.map(\.entry.modRevision) }
                    }
                }
            }
            defer { watcher.cancel() }

            var acknowledged: [Int64] = []
            var unavailable = 0
            for value in 0..<200 {
                if value == 50 {
                    let index = cluster.members.firstIndex { $0.clientURL == etcd.currentEndpoint.description } ?? 0
                    try await cluster.kill(index)
                }
                do {
                    let outcome = try await etcd.transaction(EtcdTransaction(success: [.put(key: key, value: Data("\(value)".utf8))]))
                    acknowledged.append(outcome.revision)
                } catch let error as EtcdError {
                    guard case .unavailable = error else { throw error }
                    unavailable += 1
                }
            }
            #expect(unavailable <= 3, "a member's death failed \(unavailable) writes")
            #expect(acknowledged.count >= 197)
            let last = acknowledged.last ?? 0
            try await eventually("the watch to reach revision \(last)") { (seen.withLock { $0.last } ?? 0) >= last }
            let revisions = seen.withLock { $0 }
            #expect(revisions == revisions.sorted() && Set(revisions).count == revisions.count, "the watch repeated or reordered revisions")
            #expect(Set(acknowledged).isSubset(of: Set(revisions)), "the watch missed an acknowledged write")
            let read = try await etcd.range(key: key)
            #expect(read.entries.first?.modRevision == last)
        }
    }
}
