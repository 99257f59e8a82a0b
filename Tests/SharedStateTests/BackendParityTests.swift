import Foundation
import SharedState
import Synchronization
import Testing

/// The in-memory backend (the dependency's test value) must behave exactly like syncd: the same
/// script gives the same transcript against both.
@Suite struct BackendParityTests {
    @Test func inMemorySharedStateMatchesSyncd() async throws {
        var daemonTranscript: [String] = []
        try await withDaemon { socketPath in
            let client = try await connect(socketPath)
            daemonTranscript = try await exercise(client)
            await client.close()
        }
        let memoryTranscript = try await exercise(InMemorySharedState())
        #expect(memoryTranscript.count > 20)
        for (daemon, memory) in zip(daemonTranscript, memoryTranscript) {
            #expect(memory == daemon)
        }
        #expect(memoryTranscript.count == daemonTranscript.count)
    }

    /// Runs every kind of operation, good and bad, and writes down what came back.
    private func exercise(_ backend: any SharedStateBackend) async throws -> [String] {
        var transcript: [String] = []
        func record(_ step: String, _ operation: () async throws -> String) async {
            do {
                transcript.append("\(step): \(try await operation())")
            } catch let error as SharedStateError {
                transcript.append("\(step): \(error.code) \(error.message)")
            } catch {
                transcript.append("\(step): \(error)")
            }
        }
        func describe(_ entry: Entry) -> String {
            "\(entry.key)=\(String(decoding: entry.value, as: UTF8.self)) v\(entry.version) c\(entry.createRevision) m\(entry.modRevision)"
        }
        func describe(_ batch: WatchBatch) -> String {
            let changes = batch.changes.map { "\($0.type) \(describe($0.entry))" }
            return "\(batch.kind)@\(batch.revision) [\(changes.joined(separator: ", "))]"
        }

        let watch = backend.watch(prefixes: ["a/"])
        await record("put") { try await "\(backend.put("a/1", json: "1"))" }
        await record("put if absent") { try await "\(backend.put("a/1", json: "2", ifVersion: 0))" }
        await record("put if version") { try await "\(backend.put("a/1", json: "3", ifVersion: 1))" }
        await record("put other") { try await "\(backend.put("b/1", json: #"{"x":[1,2]}"#))" }
        await record("get") { try await describe(backend.get("a/1")) }
        await record("get missing") { try await describe(backend.get("a/none")) }
        await record("empty key") { try await "\(backend.put("", json: "1"))" }
        await record("bad key") { try await "\(backend.put("a//b", json: "1"))" }
        await record("not json") { try await "\(backend.put("a/2", json: "{oops"))" }
        await record("delete missing") { try await "\(backend.delete("a/none"))" }
        await record("delete wrong version") { try await "\(backend.delete("a/1", ifVersion: 7))" }
        await record("transaction") {
            try await
                "\(backend.transaction(Transaction(compares: [.version(of: "a/1", is: 2)], onSuccess: [.put("a/2", json: "20"), .delete("a/1")], onFailure: [.put("a/3", json: "30")])))"
        }
        await record("transaction else") {
            try await
                "\(backend.transaction(Transaction(compares: [.value(of: "a/2", is: Data("21".utf8))], onSuccess: [.put("a/4", json: "40")], onFailure: [.put("a/3", json: "30")])))"
        }
        await record("transaction of nothing") {
            try await "\(backend.transaction(Transaction(compares: [.absent("a/9")], onSuccess: [.delete("a/9")])))"
        }
        await record("transaction twice") {
            try await "\(backend.transaction(Transaction(onSuccess: [.put("a/5", json: "1"), .delete("a/5")])))"
        }
        await record("transaction conflict") {
            try await "\(backend.transaction(Transaction(onSuccess: [.put("a/5", json: "1"), .put("a/6", json: "1", ifVersion: 3)])))"
        }
        await record("list") {
            let list = try await backend.list(prefix: "a/", limit: 1)
            return "\(list.entries.map(describe)) @\(list.revision) truncated \(list.isTruncated)"
        }
        await record("list all") {
            let list = try await backend.list(prefix: "", limit: nil)
            return "\(list.entries.map(describe)) @\(list.revision) truncated \(list.isTruncated)"
        }
        await record("bad limit") { try await "\(backend.list(prefix: "a/", limit: 0))" }
        await record("exists") {
            let found = try await backend.exists(["a/1", "a/2", "a/none", "b/1"])
            return "\(found.versions.sorted { $0.key < $1.key }) @\(found.revision)"
        }
        await record("exists of nothing") { try await "\(backend.exists([]))" }
        await record("exists bad key") { try await "\(backend.exists(["a//b"]))" }
        await record("exists too many") { try await "\(backend.exists((0...128).map { "k/\($0)" }))" }
        // Schemas: enforced by both alike, with the same words.
        let fan = #"{"type":"object","required":["on"],"properties":{"on":{"type":"boolean"}}}"#
        await record("schema set") { try await "\(backend.setSchema("s/", document: Data(fan.utf8)))" }
        await record("schema broken") { try await "\(backend.put("s/1", json: #"{"on":"yes"}"#))" }
        await record("schema kept") { try await "\(backend.put("s/1", json: #"{"on":true}"#))" }
        await record("schema refused") { try await "\(backend.setSchema("s/", document: Data(#"{"type":"string"}"#.utf8)))" }
        await record("schema unknown keyword") { try await "\(backend.setSchema("t/", document: Data(#"{"oneOf":[]}"#.utf8)))" }
        await record("schema ephemeral") { try await "\(backend.put("$schemas/t/", json: "true", ephemeral: true))" }
        await record("schema in a transaction") {
            try await "\(backend.transaction(Transaction(onSuccess: [.put("$schemas/t/", json: "true")])))"
        }
        await record("schema broken in a branch not taken") {
            try await "\(backend.transaction(Transaction(compares: [.absent("s/9")], onFailure: [.put("s/2", json: "1")])))"
        }
        await record("schema read") { try await "\(backend.schema(for: "s/")?.prefix ?? "none")" }
        await record("schema deleted") { try await "\(backend.deleteSchema("s/"))" }
        await record("schema gone") { try await "\(backend.put("s/2", json: "1"))" }
        await record("schema values deleted") {
            try await "\(backend.transaction(Transaction(onSuccess: [.delete("s/1"), .delete("s/2")])))"
        }

        // Progress notices depend on timing: firstBatches leaves them out.
        for batch in try await firstBatches(5, of: watch) {
            transcript.append("live \(describe(batch))")
        }
        for batch in try await firstBatches(4, of: backend.watch(prefixes: ["a/", "b/"], fromRevision: 1)) {
            transcript.append("replay \(describe(batch))")
        }
        for batch in try await firstBatches(1, of: backend.watch(prefixes: ["a/"])) {
            transcript.append("snapshot \(describe(batch))")
        }
        for batch in try await firstBatches(1, of: backend.watch(prefixes: [])) {
            transcript.append("everything \(describe(batch))")
        }
        do {
            _ = try await firstBatches(1, of: backend.watch(prefixes: ["a/"], fromRevision: 1000))
            transcript.append("ahead: accepted")
        } catch {
            transcript.append("ahead: \(error)")
        }
        do {
            _ = try await firstBatches(1, of: backend.watch(prefixes: ["a//"]))
            transcript.append("bad prefix: accepted")
        } catch {
            transcript.append("bad prefix: \(error)")
        }
        return transcript
    }
}

/// The order of a write's answer and the watch events it causes.
@Suite struct EventOrderTests {
    @Test(arguments: ["syncd", "in-memory"])
    func aWritesEventsArriveBeforeItsAnswer(backendName: String) async throws {
        if backendName == "syncd" {
            try await withDaemon { socketPath in
                let client = try await connect(socketPath)
                try await checkOrder(client)
                await client.close()
            }
        } else {
            try await checkOrder(InMemorySharedState())
        }
    }

    /// Every answer that carries revision R comes after the watch received R's event.
    private func checkOrder(_ backend: any SharedStateBackend) async throws {
        let watch = backend.watch(prefixes: ["a/"])
        var iterator = watch.makeAsyncIterator()
        _ = try await iterator.next()  // the snapshot
        let put = try await backend.put("a/1", json: "1")
        #expect(watch.latestRevision >= put.revision)
        let transaction = try await backend.transaction(Transaction(onSuccess: [.put("a/2", json: "2"), .put("a/3", json: "3")]))
        #expect(watch.latestRevision >= transaction.revision)
        let delete = try await backend.delete("a/1")
        #expect(watch.latestRevision >= delete)
        // A progress notice may come between the events on a loaded machine (an idle round
        // passes every 5 s): it says nothing of their order.
        func nextChanges() async throws -> WatchBatch? {
            while let batch = try await iterator.next() {
                if batch.kind != .progress { return batch }
            }
            return nil
        }
        #expect(try await nextChanges()?.revision == put.revision)
        #expect(try await nextChanges()?.changes.count == 2)
        #expect(try await nextChanges()?.revision == delete)
    }

    @Test func inMemoryAnswersAfterTheWatchHandledTheEvent() async throws {
        for _ in 0..<50 {
            let backend = InMemorySharedState()
            let log = Mutex<[String]>([])
            let watch = backend.watch(prefixes: ["a/"])
            let consumer = Task {
                for try await batch in watch where batch.kind != .snapshot {
                    await Task.yield()  // handling takes a while
                    log.withLock { $0.append("event \(batch.revision)") }
                }
            }
            // Wait until the consumer iterates, as a feature's effect would be, and has handled
            // every warm-up put: under load, more than one is made before the first is handled.
            var warmUp: UInt64 = 0
            while log.withLock({ $0.isEmpty }) {
                warmUp = try await backend.put("a/warm-up", json: "0").revision
                try await Task.sleep(for: .milliseconds(1))
            }
            while !log.withLock({ $0.contains("event \(warmUp)") }) {
                try await Task.sleep(for: .milliseconds(1))
            }
            log.withLock { $0.removeAll() }
            for value in 1...10 {
                let result = try await backend.put("a/k", json: "\(value)")
                log.withLock { $0.append("answer \(result.revision)") }
            }
            consumer.cancel()
            let entries = log.withLock { $0 }
            let expected = entries.compactMap { $0.hasPrefix("answer ") ? $0.dropFirst(7) : nil }
                .flatMap { ["event \($0)", "answer \($0)"] }
            #expect(entries == expected)
        }
    }
}
