import Foundation
import SyncClient
import Testing

/// Lists and watch snapshots of more keys than syncd reads under its lock (1,000), and of more bytes
/// than a connection sends in one piece (256 KiB), against a real syncd while another client
/// writes into the same prefix: each is the state at its revision, and a watch's changes follow
/// its snapshot without a gap.
@Suite(.timeLimit(.minutes(2))) struct HeavyRequestTests {
    private static let keys = 3_000

    @Test func listsAndSnapshotsOfManyKeysAreTheStateAtTheirRevisionWhileWritesGoOn() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        let load = try await syncctl(
            ["bench", "put", "--count", "\(Self.keys)", "--keys", "\(Self.keys)", "--value-size", "1000"], scratch: scratch)
        #expect(load.status == 0, "\(load.stderr)")

        let reader = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "reader"))
        let writer = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "writer"))
        let watcher = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "watcher"))
        let batches = Collector<WatchBatch>()
        let written = Collector<Int>()

        let watching = Task {
            for try await batch in watcher.watch(prefixes: ["bench/"]) { batches.add(batch) }
        }
        defer { watching.cancel() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                var count = 0
                while !Task.isCancelled {
                    count += 1
                    _ = try await writer.put("bench/\(count * 7 % Self.keys)", json: "\(count)")
                    written.add(count)
                }
            }
            try await eventually("the writer to get going") { written.all.count >= 20 }
            for _ in 0..<3 {
                let listing = try await reader.list(prefix: "bench/")
                let keys = listing.entries.map(\.key)
                #expect(keys.count == Self.keys)
                #expect(zip(keys, keys.dropFirst()).allSatisfy { $0.utf8.lexicographicallyPrecedes($1.utf8) })
                #expect(listing.entries.allSatisfy { $0.modRevision <= listing.revision })
                #expect(listing.entries.contains { $0.modRevision > UInt64(Self.keys) })
            }
            try await eventually("the watch's snapshot") { batches.all.first?.kind == .snapshot }
            group.cancelAll()
        }

        // The snapshot and the changes after it, applied in order, are the state now.
        let final = try await reader.list(prefix: "bench/")
        try await eventually("the watch to reach the last write") { batches.all.last?.revision == final.revision }
        let received = batches.all
        let snapshot = try #require(received.first)
        #expect(snapshot.changes.count == Self.keys)
        var state: [String: Data] = [:]
        for change in snapshot.changes { state[change.key] = change.entry.value }
        var revision = snapshot.revision
        for batch in received.dropFirst() where batch.kind == .changes {
            #expect(batch.revision == revision + 1, "changes follow each other without a gap")
            revision = batch.revision
            for change in batch.changes { state[change.key] = change.type == .put ? change.entry.value : nil }
        }
        #expect(state == Dictionary(uniqueKeysWithValues: final.entries.map { ($0.key, $0.value) }))
        try await daemon.stop()
    }
}
