import Foundation
import GRDB
import Logging
import NIOCore
import SharedStateWire
import Synchronization
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

/// A watch subscriber that keeps every frame it is sent, decoded: the frames syncd's sink
/// (``ConnectionDelivery``) makes of the engine's messages.
final class CollectingSubscriber: FrameReceiver {
    private let frames = Mutex<[Sharedstate_V1_ServerFrame]>([])
    let backlog = Backlog()

    var isBacklogged: Bool {
        get { backlog.isBacklogged }
        set { backlog.set(newValue) }
    }

    func send(_ frames: [ByteBuffer], in batch: inout DeliveryBatch) {
        send(frames)
    }

    func receive(_ answers: DeliveryRound.AnswerList, in batch: inout DeliveryBatch) {}

    func send(_ buffers: [ByteBuffer]) {
        var decoder = FrameDecoder(maxFrameBytes: .max)
        let decoded = buffers.map { buffer in
            var buffer = buffer
            let payload = try! decoder.decode(buffer: &buffer)!
            return try! Frame.decode(Sharedstate_V1_ServerFrame.self, from: payload)
        }
        frames.withLock { $0.append(contentsOf: decoded) }
    }

    var received: [Sharedstate_V1_ServerFrame] { frames.withLock { $0 } }
    var events: [Sharedstate_V1_WatchEvent] { received.compactMap { if case .event(let event) = $0.kind { event } else { nil } } }
}

/// Runs an engine over a fresh database for the duration of `body`.
func withEngine(
    path: String? = nil,
    durability: Durability = .normal,
    configuration: StateEngine.Configuration = .init(),
    _ body: (StateEngine) async throws -> Void
) async throws {
    let directory = try TemporaryDirectory()
    let storage = try Storage(path: path ?? directory.file("state.sqlite"), durability: durability)
    let engine = try StateEngine(storage: storage, configuration: configuration, logger: Logger(label: "test"))
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await engine.runWrites() }
        // Only once the writer answers is it running: the child task above is merely scheduled,
        // and on a busy machine the cooperative pool may run other tests' work for seconds first,
        // while a body that queues writes (rather than committing them on its own thread) and
        // waits for their answers would time out.
        _ = await engine.write(.probe)
        do {
            try await body(engine)
        } catch {
            engine.shutDown()
            throw error
        }
        engine.shutDown()
        try await group.waitForAll()
    }
    try storage.close()
}

extension StateEngine {
    /// An engine over a SQLite database, starting from the state it holds, delivering as syncd
    /// does.
    convenience init(storage: Storage, configuration: Configuration = Configuration(), logger: Logger) throws {
        let backend = SQLiteBackend(storage: storage, logger: logger)
        self.init(backend: backend, state: try backend.load(), configuration: configuration, delivery: ConnectionDelivery(), logger: logger)
    }

    /// A list, read wherever its size says.
    func listed(prefix: String, start: String = "", limit: Int? = nil) -> Listing {
        switch list(prefix: prefix, start: start, limit: limit) {
        case .listed(let listing): listing
        case .tooLarge(let large): large.read()
        }
    }

    func write(_ request: WriteRequest) async -> Result<WriteOutcome, SharedStateError> {
        await withCheckedContinuation { continuation in
            submit(request) { continuation.resume(returning: $0) }
        }
    }

    func put(_ key: String, _ json: String, ifVersion: UInt64? = nil) async -> Result<WriteOutcome, SharedStateError> {
        await write(.put(key: key, value: Data(json.utf8), ifVersion: ifVersion))
    }
}

/// A test's side of the answers to writes: each commit's answers for it, as one call each.
protocol AnswerCollector: FrameReceiver {
    func receive(_ answers: [WriteAnswer])
}

extension AnswerCollector {
    var backlog: Backlog { Backlog() }

    func send(_ frames: [ByteBuffer], in batch: inout DeliveryBatch) {}

    func receive(_ answers: DeliveryRound.AnswerList, in batch: inout DeliveryBatch) {
        switch answers {
        case .one(let answer): receive([answer])
        case .many(let answers): receive(answers)
        }
    }
}

extension Result where Failure == SharedStateError {
    var errorCode: SharedStateError.Code? {
        if case .failure(let error) = self { return error.code }
        return nil
    }
}

@Suite struct StateEngineTests {
    @Test func everyChangingWriteGetsTheNextRevision() async throws {
        try await withEngine { engine in
            #expect(await engine.put("a", "1") == .success(.put(revision: 1, version: 1)))
            #expect(await engine.put("a", "2") == .success(.put(revision: 2, version: 2)))
            #expect(await engine.put("a", "3", ifVersion: 1).errorCode == .conflict)
            #expect(await engine.write(.delete(key: "missing", ifVersion: nil)).errorCode == .notFound)
            #expect(await engine.put("b", "1", ifVersion: 0) == .success(.put(revision: 3, version: 1)))
            #expect(await engine.write(.delete(key: "a", ifVersion: 2)) == .success(.delete(revision: 4)))
            #expect(engine.revision == 4)
            #expect(engine.entry("a").entry == nil)
            #expect(engine.entry("b").entry?.createRevision == 3)
        }
    }

    @Test func concurrentWritesGetDistinctConsecutiveRevisions() async throws {
        try await withEngine { engine in
            let outcomes = await withTaskGroup(of: Result<WriteOutcome, SharedStateError>.self) { group in
                for index in 0..<500 {
                    group.addTask { await engine.put("key/\(index % 50)", "\(index)") }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let revisions = outcomes.compactMap { outcome -> UInt64? in
                if case .success(.put(let revision, _)) = outcome { return revision }
                return nil
            }
            #expect(revisions.sorted() == Array(1...500))
            #expect(engine.statistics.keys == 50)
        }
    }

    @Test func compareAndSetLetsExactlyOneOfManyRacersWin() async throws {
        try await withEngine { engine in
            _ = await engine.put("lock", "null")
            let winners = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<40 {
                    group.addTask { (try? await engine.put("lock", "\(index)", ifVersion: 1).get()) != nil }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(winners == 1)
            #expect(engine.entry("lock").entry?.version == 2)
        }
    }

    @Test func snapshotThenChangesIsGaplessUnderConcurrentWrites() async throws {
        try await withEngine { engine in
            let subscriber = CollectingSubscriber()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for index in 0..<300 { _ = await engine.put("k/\(index % 7)", "\(index)") }
                }
                try await Task.sleep(for: .milliseconds(5))
                try await engine.startWatch(id: 1, prefixes: ["k/"], start: .snapshot, subscriber: subscriber)
                try await group.waitForAll()
            }
            let events = subscriber.events
            let snapshot = try #require(events.first)
            #expect(snapshot.kind == .snapshot)
            let changes = events.dropFirst()
            #expect(changes.map(\.revision) == Array((snapshot.revision + 1)...300))
            // Snapshot plus changes rebuilds exactly the final state.
            var state: [String: Data] = [:]
            for change in snapshot.changes { state[change.entry.key] = change.entry.value }
            for event in changes {
                for change in event.changes { state[change.entry.key] = change.entry.value }
            }
            let final = engine.listed(prefix: "k/").entries
            #expect(state == Dictionary(uniqueKeysWithValues: final.map { ($0.key, $0.value) }))
        }
    }

    @Test func watchSelectsByPrefixAndKeepsARevisionsChangesTogether() async throws {
        try await withEngine { engine in
            let subscriber = CollectingSubscriber()
            try await engine.startWatch(id: 9, prefixes: ["door/"], start: .now, subscriber: subscriber)
            _ = await engine.put("window/a", "1")
            _ = await engine.write(
                .transaction(
                    compares: [],
                    onSuccess: [
                        .put(key: "door/a", value: Data("1".utf8), ifVersion: nil),
                        .put(key: "door/b", value: Data("2".utf8), ifVersion: nil),
                        .put(key: "window/b", value: Data("3".utf8), ifVersion: nil),
                    ],
                    onFailure: []
                )
            )
            let events = subscriber.events
            #expect(events.count == 1)
            #expect(events.first?.watchID == 9)
            #expect(events.first?.revision == 2)
            #expect(events.first?.changes.map(\.entry.key) == ["door/a", "door/b"])
        }
    }

    @Test func eachWatchGetsExactlyTheChangesOfARevisionItsPrefixesSelect() async throws {
        try await withEngine { engine in
            let keys = ["a/1", "b/1", "a/2", "c/1", "c/2"]
            // Each watch's prefixes, and the keys of the revision it should be sent.
            let cases: [(prefixes: [String], selected: [String])] = [
                (["a/"], ["a/1", "a/2"]),
                (["b/"], ["b/1"]),
                (["c/"], ["c/1", "c/2"]),
                (["a/", "b/", "c/"], keys),
                ([""], keys),
                (["d/"], []),
                (["a/2", "c/"], ["a/2", "c/1", "c/2"]),
            ]
            var subscribers: [CollectingSubscriber] = []
            for (index, watch) in cases.enumerated() {
                let subscriber = CollectingSubscriber()
                try await engine.startWatch(id: UInt64(index + 1), prefixes: watch.prefixes, start: .now, subscriber: subscriber)
                subscribers.append(subscriber)
            }
            _ = await engine.write(
                .transaction(
                    compares: [], onSuccess: keys.map { .put(key: $0, value: Data("1".utf8), ifVersion: nil) }, onFailure: []))
            for (watch, subscriber) in zip(cases, subscribers) {
                let events = subscriber.events
                #expect(events.count == (watch.selected.isEmpty ? 0 : 1), "\(watch.prefixes)")
                #expect((events.first?.changes.map(\.entry.key) ?? []) == watch.selected, "\(watch.prefixes)")
            }
        }
    }

    /// A list from a start key: the next page of a long list, and a skip past a folder, whether
    /// read under the lock or, past `entriesReadInPlace`, from a copy of the order.
    @Test(arguments: [1_000, 2])
    func aListStartsAtItsStartKey(entriesReadInPlace: Int) async throws {
        var configuration = StateEngine.Configuration()
        configuration.entriesReadInPlace = entriesReadInPlace
        try await withEngine(configuration: configuration) { engine in
            for key in ["a", "b/1", "b/2", "b/3", "b0", "c/1", "d"] { _ = await engine.put(key, "1") }
            func keys(_ prefix: String, from start: String, limit: Int? = nil) -> [String] {
                engine.listed(prefix: prefix, start: start, limit: limit).entries.map(\.key)
            }
            #expect(keys("", from: "b/2") == ["b/2", "b/3", "b0", "c/1", "d"])
            // Past everything under b/: its last "/" raised to "0".
            #expect(keys("", from: "b0", limit: 1) == ["b0"])
            #expect(keys("", from: "b0\u{0}", limit: 1) == ["c/1"])
            // A start before the prefix starts at the prefix; one after everything lists nothing.
            #expect(keys("b/", from: "a") == ["b/1", "b/2", "b/3"])
            #expect(keys("b/", from: "b/9").isEmpty)
            let page = engine.listed(prefix: "b/", start: "b/1\u{0}", limit: 1)
            #expect(page.entries.map(\.key) == ["b/2"])
            #expect(page.hasMore)
        }
    }

    /// An event's revision, and its kind unless it is a change.
    static func revisionAndKind(_ event: Sharedstate_V1_WatchEvent) -> String {
        event.kind == .changes ? "\(event.revision)" : "\(event.revision) \(event.kind == .progress ? "progress" : "\(event.kind)")"
    }

    @Test func replayFromARevisionThenLiveWithoutGapOrDuplicate() async throws {
        try await withEngine { engine in
            for index in 1...10 { _ = await engine.put("r/\(index)", "\(index)") }
            let subscriber = CollectingSubscriber()
            try await engine.startWatch(id: 2, prefixes: [""], start: .after(4), subscriber: subscriber)
            for index in 11...15 { _ = await engine.put("r/\(index)", "\(index)") }
            // The replay (5 to 10), a progress notice where it ends, then live.
            #expect(subscriber.events.map(Self.revisionAndKind) == (5...10).map { "\($0)" } + ["10 progress"] + (11...15).map { "\($0)" })
            guard case .response(let response) = subscriber.received.first?.kind else {
                Issue.record("the watch response must come first")
                return
            }
            #expect(response.watch.revision == 4)
        }
    }

    @Test func resumingFromARevisionAheadOfTheDaemonIsRefused() async throws {
        try await withEngine { engine in
            _ = await engine.put("a", "1")
            let error = await #expect(throws: SharedStateError.self) {
                try await engine.startWatch(id: 1, prefixes: [], start: .after(2), subscriber: CollectingSubscriber())
            }
            // A code of its own, which the client answers with a new snapshot.
            #expect(error?.code == .futureRevision)
            try await engine.startWatch(id: 1, prefixes: [], start: .after(1), subscriber: CollectingSubscriber())
        }
    }

    @Test func watchIdsAreUniquePerSubscriberAndCancellable() async throws {
        try await withEngine { engine in
            let subscriber = CollectingSubscriber()
            try await engine.startWatch(id: 1, prefixes: [], start: .now, subscriber: subscriber)
            await #expect(throws: SharedStateError.self) {
                try await engine.startWatch(id: 1, prefixes: [], start: .now, subscriber: subscriber)
            }
            try await engine.startWatch(id: 1, prefixes: [], start: .now, subscriber: CollectingSubscriber())
            #expect(engine.statistics.watches == 2)
            #expect(engine.cancelWatch(id: 1, of: subscriber))
            #expect(!engine.cancelWatch(id: 1, of: subscriber))
            _ = await engine.put("x", "1")
            #expect(subscriber.events.isEmpty)
        }
    }

    @Test func anEndedSessionsEphemeralKeysAreDeletedAsOneRevision() async throws {
        try await withEngine { engine in
            let subscriber = CollectingSubscriber()
            try await engine.startWatch(id: 1, prefixes: ["presence/"], start: .now, subscriber: subscriber)
            _ = await engine.write(.put(key: "presence/a", value: Data("1".utf8), ifVersion: nil, ephemeralSession: 7))
            _ = await engine.write(.put(key: "presence/b", value: Data("1".utf8), ifVersion: nil, ephemeralSession: 7))
            // Made persistent by a plain put, and moved to another session: both survive session 7.
            _ = await engine.write(.put(key: "presence/c", value: Data("1".utf8), ifVersion: nil, ephemeralSession: 7))
            _ = await engine.put("presence/c", "2")
            _ = await engine.write(.put(key: "presence/d", value: Data("1".utf8), ifVersion: nil, ephemeralSession: 7))
            _ = await engine.write(.put(key: "presence/d", value: Data("2".utf8), ifVersion: nil, ephemeralSession: 8))
            #expect(engine.entry("presence/a").entry?.ephemeralSession == 7)

            engine.endSession(7)
            _ = await engine.write(.probe)  // queued behind the expiry
            #expect(engine.listed(prefix: "presence/").entries.map(\.key) == ["presence/c", "presence/d"])
            let last = try #require(subscriber.events.last)
            #expect(last.revision == 7)
            #expect(last.changes.map(\.type) == [.delete, .delete])
            #expect(last.changes.map(\.entry.key) == ["presence/a", "presence/b"])
        }
    }

    @Test func anEphemeralPutStillQueuedWhenItsSessionEndsIsDeletedToo() async throws {
        try await withEngine { engine in
            // Both are queued before the writer sees either: the end must see the put.
            engine.submit(.put(key: "p", value: Data("1".utf8), ifVersion: nil, ephemeralSession: 9)) { _ in }
            engine.endSession(9)
            _ = await engine.write(.probe)
            #expect(engine.entry("p").entry == nil)
            #expect(engine.revision == 2)
        }
    }

    @Test func ephemeralKeysOfAPreviousRunAreDeletedAtStart() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        try await withEngine(path: path) { engine in
            _ = await engine.write(.put(key: "presence/a", value: Data("1".utf8), ifVersion: nil, ephemeralSession: 3))
            _ = await engine.put("kept", "1")
        }
        try await withEngine(path: path) { engine in
            // withEngine starts the writer; the start-up path runs before it in syncd.
            #expect(engine.entry("presence/a").entry?.ephemeralSession == 3)
        }
        let storage = try Storage(path: path, durability: .normal)
        let engine = try StateEngine(storage: storage, logger: Logger(label: "test"))
        try engine.expireEphemeralKeysOfPreviousRun()
        #expect(engine.entry("presence/a").entry == nil)
        #expect(engine.entry("kept").entry != nil)
        #expect(engine.revision == 3)
        try storage.close()
    }

    @Test func idleWatchesGetProgressNoticesAndBusyOnesDoNot() async throws {
        try await withEngine { engine in
            let idle = CollectingSubscriber()
            let busy = CollectingSubscriber()
            try await engine.startWatch(id: 1, prefixes: ["quiet/"], start: .now, subscriber: idle)
            try await engine.startWatch(id: 1, prefixes: ["busy/"], start: .now, subscriber: busy)
            _ = await engine.put("busy/a", "1")
            engine.sendProgressNotices()
            #expect(idle.events.map(\.kind) == [.progress])
            #expect(idle.events.first?.revision == 1)
            #expect(busy.events.map(\.kind) == [.changes])
            // Next round, the busy watch was idle in between.
            engine.sendProgressNotices()
            #expect(busy.events.map(\.kind) == [.changes, .progress])
        }
    }

    @Test func compactionRefusesResumingFromBeforeItAndKeepsEntries() async throws {
        try await withEngine { engine in
            for index in 1...10 { _ = await engine.put("k/\(index % 3)", "\(index)") }
            #expect(try await engine.compact(through: 6) == 6)
            #expect(engine.statistics.compactedRevision == 6)
            await #expect(throws: SharedStateError.self) {
                try await engine.startWatch(id: 1, prefixes: [], start: .after(5), subscriber: CollectingSubscriber())
            }
            let subscriber = CollectingSubscriber()
            try await engine.startWatch(id: 1, prefixes: [], start: .after(6), subscriber: subscriber)
            #expect(subscriber.events.map(Self.revisionAndKind) == ["7", "8", "9", "10", "10 progress"])
            #expect(engine.listed(prefix: "k/").entries.count == 3)
            do {
                try await engine.compact(through: 11)
                Issue.record("compacting past the current revision must fail")
            } catch let error as SharedStateError {
                #expect(error.code == .invalidArgument)
            }
            #expect(try await engine.compact(through: 3) == 6)
        }
    }

    @Test func retentionKeepsTheConfiguredNumberOfRevisions() async throws {
        try await withEngine(configuration: .init(retainedRevisions: 10)) { engine in
            for index in 1...25 { _ = await engine.put("k", "\(index)") }
            await engine.applyRetention()
            #expect(engine.statistics.compactedRevision == 15)
        }
    }

    @Test func aBackloggedSubscriberSkipsChangesThenGetsAResyncSnapshot() async throws {
        try await withEngine { engine in
            let slow = CollectingSubscriber()
            let fast = CollectingSubscriber()
            try await engine.startWatch(id: 4, prefixes: ["s/"], start: .snapshot, subscriber: slow)
            try await engine.startWatch(id: 4, prefixes: ["s/"], start: .snapshot, subscriber: fast)
            _ = await engine.put("s/a", "1")
            _ = await engine.put("s/b", "1")
            slow.isBacklogged = true
            _ = await engine.put("s/a", "2")
            _ = await engine.write(.delete(key: "s/b", ifVersion: nil))
            _ = await engine.put("s/c", "3")
            #expect(slow.events.map(\.revision) == [0, 1, 2])
            #expect(fast.events.map(\.revision) == [0, 1, 2, 3, 4, 5])

            slow.isBacklogged = false
            #expect(engine.resync(slow).count == 1)
            let resync = try #require(slow.events.last)
            #expect(resync.kind == .resync)
            #expect(resync.revision == 5)
            #expect(resync.changes.map(\.entry.key) == ["s/a", "s/c"])
            #expect(resync.changes.map(\.entry.value) == [Data("2".utf8), Data("3".utf8)])
            // Live again afterwards.
            _ = await engine.put("s/d", "4")
            #expect(slow.events.last?.revision == 6)
        }
    }

    @Test func stateIsLoadedBackAfterRestart() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        try await withEngine(path: path) { engine in
            _ = await engine.put("a", "1")
            _ = await engine.put("b", #"{"x":1}"#)
            _ = await engine.write(.delete(key: "a", ifVersion: nil))
        }
        try await withEngine(path: path) { engine in
            #expect(engine.revision == 3)
            #expect(engine.entry("a").entry == nil)
            #expect(engine.entry("b").entry?.value == Data(#"{"x":1}"#.utf8))
            #expect(await engine.put("b", "2") == .success(.put(revision: 4, version: 2)))
        }
    }

    @Test func writesAfterShutdownAreRefusedAsUnavailable() async throws {
        let directory = try TemporaryDirectory()
        let storage = try Storage(path: directory.file("state.sqlite"), durability: .normal)
        let engine = try StateEngine(storage: storage, logger: Logger(label: "test"))
        engine.shutDown()
        await engine.runWrites()
        #expect(await engine.put("a", "1").errorCode == .unavailable)
    }

    @Test func aFailedCommitRefusesTheWritesAndChangesNothing() async throws {
        // The journal's file is swapped for /dev/full under syncd, so its write fails as on a full
        // disk: not a closed file misused.
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let storage = try Storage(path: path, durability: .normal)
        let log = RecordedLog()
        let engine = try StateEngine(storage: storage, logger: Logger(label: "test") { _ in RecordingLogHandler(log: log) })
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await engine.runWrites() }
            _ = await engine.put("a", "1")
            let descriptor = try #require(storage.journal.descriptor)
            let saved = dup(descriptor)
            let full = open("/dev/full", O_WRONLY)
            #expect(saved >= 0 && full >= 0 && dup2(full, descriptor) == descriptor)
            let result = await engine.put("a", "2")
            #expect(dup2(saved, descriptor) == descriptor)
            close(saved)
            close(full)
            #expect(result.errorCode == .unavailable)
            #expect(engine.revision == 1)
            #expect(engine.entry("a").entry?.version == 1)
            #expect(
                log.messages.contains { $0.hasPrefix("commit failed; the writes were refused") && $0.contains("No space left on device") })
            // Once the file is back, the next write commits with the next revision.
            #expect(await engine.put("a", "3") == .success(.put(revision: 2, version: 2)))
            engine.shutDown()
            try await group.waitForAll()
        }
        try storage.close()
    }

    @Test func aClosedDatabaseRefusesEveryUseWithoutReachingSQLite() async throws {
        let directory = try TemporaryDirectory()
        let storage = try Storage(path: directory.file("state.sqlite"), durability: .normal)
        let engine = try StateEngine(storage: storage, logger: Logger(label: "test") { _ in RecordingLogHandler(log: RecordedLog()) })
        try storage.close()
        try storage.close()
        let revision = CommittedRevision(
            revision: 1, changes: [.put(Entry(key: "a", value: Data("1".utf8), version: 1, createRevision: 1, modRevision: 1))])
        func expectRefused(_ use: String, _ body: () async throws -> Void) async {
            do {
                try await body()
                Issue.record("\(use) on a closed database did not throw")
            } catch let error as StorageError {
                #expect(error.message == "the database is closed", "\(use)")
            } catch {
                Issue.record("\(use) threw \(error)")
            }
        }
        await expectRefused("a commit") { try storage.commit([revision]) }
        await expectRefused("a read") { _ = try await storage.history(of: "a", limit: nil) }
        await expectRefused("a checkpoint") { try await storage.checkpoint() }
        // Through the engine, a write is refused as unavailable.
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await engine.runWrites() }
            #expect(await engine.put("a", "1").errorCode == .unavailable)
            engine.shutDown()
            try await group.waitForAll()
        }
        // TemporaryDirectory fails the test if SQLite saw a closed handle.
    }

    @Test func theWriterMaterialisesTheEntriesOnceItsDelayHasPassed() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.sqlite")
        let storage = try Storage(path: path, durability: .normal, materialization: .init(maxRevisions: 1000, maxDelay: .milliseconds(20)))
        let engine = try StateEngine(storage: storage, logger: Logger(label: "test"))
        func materialisedKeys() throws -> [String] {
            let queue = try DatabaseQueue(path: path)
            defer { try? queue.close() }
            return try queue.read { try String.fetchAll($0, sql: "SELECT key FROM entries ORDER BY key") }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await engine.runWrites() }
            _ = await engine.put("a", "1")
            _ = await engine.put("b", "2")
            // No further write comes: the writer wakes by itself when the delay is up.
            let deadline = ContinuousClock.now + .seconds(10)
            while try materialisedKeys() != ["a", "b"], ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(try materialisedKeys() == ["a", "b"])
            engine.shutDown()
            try await group.waitForAll()
        }
        try storage.close()
    }

    @Test func aLoneWriteMayCommitOnTheSubmittingThreadAndKeepsOrderWithQueuedOnes() async throws {
        final class Answers: AnswerCollector {
            let received = Mutex<[WriteAnswer]>([])
            func receive(_ answers: [WriteAnswer]) {
                received.withLock { $0.append(contentsOf: answers) }
            }
        }
        try await withEngine { engine in
            let answers = Answers()
            // The writer is idle: the write commits before submit returns.
            let put = WriteRequest.put(key: "a", value: Data("1".utf8), ifVersion: nil)
            engine.submit([PendingWrite(request: put, origin: .syncd(""), answering: 1, to: answers)], mayCommitHere: true)
            #expect(engine.revision == 1)
            #expect(answers.received.withLock { $0.map(\.requestID) } == [1])
            // Queued and lone writes interleave in submission order.
            for id in UInt64(2)...40 {
                let put = WriteRequest.put(key: "a", value: Data("\(id)".utf8), ifVersion: nil)
                engine.submit([PendingWrite(request: put, origin: .syncd(""), answering: id, to: answers)], mayCommitHere: id % 2 == 0)
            }
            let deadline = ContinuousClock.now + .seconds(10)
            while answers.received.withLock({ $0.count }) < 40, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(2))
            }
            let received = answers.received.withLock { $0 }
            #expect(received.map(\.requestID) == Array(1...40))
            #expect(received.map { try? $0.result.get() } == (1...40).map { .put(revision: $0, version: $0) })
            #expect(engine.entry("a").entry?.value == Data("40".utf8))
        }
    }

    @Test func withFullDurabilityALoneWriteIsCommittedByTheWriterNotTheSubmittingThread() async throws {
        // With synchronous=FULL a commit waits for an fsync: it must never do so on an event loop.
        final class Answers: AnswerCollector {
            let threads = Mutex<[pthread_t]>([])
            func receive(_ answers: [WriteAnswer]) {
                threads.withLock { $0.append(pthread_self()) }
            }
        }
        /// Submits a lone write and returns the thread that submitted it.
        func submit(_ engine: StateEngine, _ answers: Answers) -> pthread_t {
            let put = WriteRequest.put(key: "a", value: Data("1".utf8), ifVersion: nil)
            engine.submit([PendingWrite(request: put, origin: .syncd(""), answering: 1, to: answers)], mayCommitHere: true)
            return pthread_self()
        }
        for durability in [Durability.normal, .full] {
            try await withEngine(durability: durability) { engine in
                let answers = Answers()
                let submitter = submit(engine, answers)
                let deadline = ContinuousClock.now + .seconds(10)
                while answers.threads.withLock({ $0.isEmpty }), ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(2))
                }
                let threads = answers.threads.withLock { $0 }
                #expect(threads.count == 1)
                // Normal durability commits a lone write where it was submitted; full never does.
                #expect((threads.first.map { pthread_equal($0, submitter) != 0 }) == (durability == .normal))
            }
        }
    }
}
