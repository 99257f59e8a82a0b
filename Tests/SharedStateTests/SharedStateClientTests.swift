import Foundation
import SharedState
import Testing

@Suite(.timeLimit(.minutes(1))) struct SharedStateClientTests {
    @Test func putGetListDeleteRoundTrip() async throws {
        try await withDaemon { socket in
            let client = try await connect(socket)
            let first = try await client.put("counter/value", json: "1")
            #expect(first == PutResult(revision: 1, version: 1))
            let second = try await client.put("counter/value", json: "2", ifVersion: 1)
            #expect(second == PutResult(revision: 2, version: 2))
            try await client.put("counter/label", json: #""clicks""#)

            let entry = try await client.get("counter/value")
            #expect(entry == Entry(key: "counter/value", value: Data("2".utf8), version: 2, createRevision: 1, modRevision: 2))

            let list = try await client.list(prefix: "counter/")
            #expect(list.entries.map(\.key) == ["counter/label", "counter/value"])
            #expect(list.revision == 3)
            let limited = try await client.list(prefix: "", limit: 1)
            #expect(limited.entries.count == 1 && limited.isTruncated)

            #expect(try await client.delete("counter/value") == 4)
            await #expect(throws: SharedStateError.self) { try await client.get("counter/value") }
        }
    }

    @Test func errorsCarryTheirCodeAndNameTheProblem() async throws {
        try await withDaemon { socket in
            let client = try await connect(socket)
            try await client.put("a", json: "1")
            let cases: [(SharedStateError.Code, String, () async throws -> Void)] = [
                (.notFound, "key \"missing\" not found", { _ = try await client.get("missing") }),
                (.conflict, "expected to be at version 7", { try await client.put("a", json: "2", ifVersion: 7) }),
                (.invalidArgument, "invalid JSON value", { try await client.put("a", json: "{nope") }),
                (.invalidArgument, "cannot end with '/'", { try await client.put("a/", json: "1") }),
                (.tooLarge, "over the limit", { try await client.put("big", value: Data(repeating: 0x20, count: 2 << 20)) }),
                (.notFound, "not found", { _ = try await client.delete("missing") }),
            ]
            for (code, message, body) in cases {
                do {
                    try await body()
                    Issue.record("expected \(code) error containing \(message)")
                } catch let error as SharedStateError {
                    #expect(error.code == code)
                    #expect(error.message.contains(message), "\(error.message)")
                }
            }
            // Nothing above changed anything.
            #expect(try await client.status().revision == 1)
        }
    }

    @Test func connectingToNothingIsUnavailableAndNamesTheSocket() async throws {
        do {
            _ = try await SharedStateClient.connect(.init(socketPath: "/tmp/no-such-dir/syncd.sock"))
            Issue.record("connect should fail")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.message.contains("/tmp/no-such-dir/syncd.sock"))
            #expect(error.message.contains("syncd"))
        }
    }

    @Test func transactionsAreAtomicAndConditional() async throws {
        try await withDaemon { socket in
            let client = try await connect(socket)
            let watcher = try await connect(socket)
            let stream = watcher.watch(prefixes: ["lock/"])
            // Requests on one connection are handled in order: once this answers, the watch exists.
            _ = try await watcher.status()
            let claim = Transaction(
                compares: [.absent("lock/owner")],
                onSuccess: [.put("lock/owner", json: #""kiosk-1""#), .put("lock/since", json: "1700000000")],
                onFailure: []
            )
            let won = try await client.transaction(claim)
            #expect(won == TransactionResult(succeeded: true, revision: 1))
            let lost = try await client.transaction(claim)
            #expect(lost == TransactionResult(succeeded: false, revision: 1))

            let batches = try await firstBatches(2, of: stream)
            #expect(batches[0].kind == .snapshot && batches[0].changes.isEmpty)
            #expect(batches[1].revision == 1)
            #expect(batches[1].changes.map(\.key) == ["lock/owner", "lock/since"])
        }
    }

    @Test func watchersSeeEveryChangeInOrderFromTheirSnapshot() async throws {
        try await withDaemon { socket in
            let writer = try await connect(socket, name: "writer")
            let watcher = try await connect(socket, name: "watcher")
            try await writer.put("sensor/t", json: "20")
            let stream = watcher.watch(prefixes: ["sensor/"])
            _ = try await watcher.status()
            for value in 21...40 { try await writer.put("sensor/t", json: "\(value)") }
            try await writer.put("other", json: "0")
            try await writer.delete("sensor/t")
            let batches = try await firstBatches(22, of: stream)
            #expect(batches[0].kind == .snapshot)
            #expect(batches[0].revision == 1)
            #expect(batches[0].changes.map(\.entry.value) == [Data("20".utf8)])
            // Revision 22 wrote a key outside the prefix.
            #expect(batches.dropFirst().map(\.revision) == Array(2...21) + [23])
            #expect(batches.last?.changes.first?.type == .delete)
            #expect(batches.dropFirst().allSatisfy { $0.changes.allSatisfy { $0.key == "sensor/t" } })
        }
    }

    @Test func stoppingTheConsumerCancelsTheWatchOnTheDaemon() async throws {
        try await withDaemon { socket in
            let client = try await connect(socket)
            do {
                let stream = client.watch(prefixes: ["x/"])
                _ = try await firstBatches(1, of: stream)
                #expect(try await client.status().watches == 1)
            }
            // The stream is gone: its termination sends the cancel.
            var watches: UInt64 = 1
            for _ in 0..<100 where watches != 0 {
                try await Task.sleep(for: .milliseconds(20))
                watches = try await client.status().watches
            }
            #expect(watches == 0)
        }
    }

    @Test func resumingFromARevisionReplaysTheLog() async throws {
        try await withDaemon { socket in
            let client = try await connect(socket)
            for value in 1...5 { try await client.put("log/\(value)", json: "\(value)") }
            let batches = try await firstBatches(3, of: client.watch(prefixes: ["log/"], fromRevision: 2))
            #expect(batches.map(\.revision) == [3, 4, 5])
            #expect(batches.allSatisfy { $0.kind == .changes })
        }
    }

    @Test func aWatchThatAsksForPreviousValuesCanDiffEveryChangeWithoutACache() async throws {
        try await withDaemon { socket in
            let client = try await connect(socket)
            try await client.put("cfg", json: #"{"mode":"auto","level":1}"#)
            let live = client.watch(prefixes: ["cfg"], start: .now, previousValues: true)
            let plain = client.watch(prefixes: ["cfg"], start: .now)
            // Progress notices may come between the changes under load: only changes count.
            async let liveBatches = firstBatches(2, of: live, where: { $0.kind == .changes })
            async let plainBatches = firstBatches(2, of: plain, where: { $0.kind == .changes })
            while try await client.status().watches < 2 { try await Task.sleep(for: .milliseconds(20)) }
            try await client.put("cfg", json: #"{"mode":"manual","level":1}"#)
            try await client.delete("cfg")
            let changes = try await liveBatches.flatMap(\.changes)
            #expect(
                changes.map(\.previous.value) == [Data(#"{"mode":"auto","level":1}"#.utf8), Data(#"{"mode":"manual","level":1}"#.utf8)])
            #expect(try changes[0].diff()?.operations.map { "\($0.op) \($0.path)" } == ["replace /mode"])
            #expect(try changes[1].diff()?.operations.map(\.op) == ["remove"])
            // Without asking, nothing is known of the entry before, and there is no diff.
            let others = try await plainBatches.flatMap(\.changes)
            #expect(others.map(\.previous) == [.unknown, .unknown])
            #expect(try others[0].diff() == nil)

            // A replay finds them in the change log: the key was created at revision 1.
            let replayed = try await firstBatches(
                3, of: client.watch(prefixes: ["cfg"], start: .after(0), previousValues: true), where: { $0.kind == .changes })
            #expect(replayed.flatMap(\.changes).map(\.previous.value) == [nil] + changes.map(\.previous.value))
            #expect(replayed.first?.changes.first?.previous == .absent)
        }
    }

    @Test func aDroppedConnectionEndsWatchesAndCallsWithUnavailable() async throws {
        try await withDaemon { socket in
            let client = try await connect(socket)
            let stream = client.watch(prefixes: [""])
            _ = try await firstBatches(1, of: stream)
            await client.close()
            await #expect(throws: SharedStateError.self) { try await client.put("a", json: "1") }
            do {
                for try await _ in stream {}
                Issue.record("the watch should end with an error")
            } catch {
                #expect((error as? SharedStateError)?.code == .unavailable)
            }
        }
    }
}
