import Foundation
import Logging
import SyncClient
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Collects what arrives in the background, for a test to look at.
final class Collector<Element: Sendable>: Sendable {
    private let elements = Mutex<[Element]>([])
    var all: [Element] { elements.withLock { $0 } }
    func add(_ element: Element) { elements.withLock { $0.append(element) } }
}

extension Collector where Element == WatchBatch {
    var changes: [Change] { all.flatMap(\.changes) }
}

/// The client library across daemon restarts: reconnecting, resuming watches, failing fast.
@Suite(.timeLimit(.minutes(2))) struct ReconnectTests {
    @Test func watchesResumeAfterARestartWithoutGapOrDuplicateAndCallsFailFastMeanwhile() async throws {
        let scratch = try Scratch()
        var daemon = try await DaemonProcess(scratch)
        let client = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "resilient"))
        let writer = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "writer"))
        let collector = Collector<WatchBatch>()
        let observed = Collector<ConnectionState>()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await batch in client.watch(prefixes: ["t/"]) where batch.kind != .progress { collector.add(batch) }
            }
            group.addTask {
                for await state in client.connectionStates() { observed.add(state) }
            }
            try await eventually("the snapshot") { collector.all.count == 1 }
            for value in 1...5 { try await writer.put("t/a", json: "\(value)") }
            try await eventually("five changes") { collector.changes.count == 5 }

            try await daemon.stop()
            try await eventually("the client to notice") { client.connectionState == .reconnecting }
            do {
                try await client.put("t/b", json: "0")
                Issue.record("a write while disconnected must fail, not wait")
            } catch let error as SharedStateError {
                #expect(error.code == .unavailable)
                #expect(error.message.contains("reconnecting"))
            }

            daemon = try await DaemonProcess(scratch)
            try await eventually("the client to reconnect") { client.connectionState == .connected }
            let again = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "writer"))
            for value in 6...8 { try await again.put("t/a", json: "\(value)") }
            try await eventually("eight changes") { collector.changes.count == 8 }
            group.cancelAll()
        }
        #expect(collector.all.first?.kind == .snapshot)
        #expect(collector.all.dropFirst().map(\.revision) == Array(1...8))
        #expect(observed.all.starts(with: [.connected, .reconnecting, .connected]))
        await client.close()
        try await daemon.stop()
    }

    /// What a feature process's log says when syncd goes away and comes back: FeatureHost gives
    /// the client its logger.
    @Test func losingSyncdReconnectingAndPresencePutBackAreLoggedAtInfo() async throws {
        let scratch = try Scratch()
        var daemon = try await DaemonProcess(scratch)
        let log = CapturedLog()
        var configuration = SharedStateClient.Configuration(socketPath: scratch.socket, clientName: "door-panel")
        configuration.logger = Logger(label: "door-panel") { _ in log }
        let client = try await SharedStateClient.connect(configuration)
        try await client.put("presence/door-panel", json: "true", ephemeral: true)
        #expect(log.lines.isEmpty)

        try await daemon.stop()
        try await eventually("the client to notice") { client.connectionState == .reconnecting }
        daemon = try await DaemonProcess(scratch)
        try await eventually("the client to reconnect") { client.connectionState == .connected }
        try await eventually("the reconnection logged") { log.lines.count == 2 }
        #expect(log.lines[0] == "info: lost the connection to syncd at \(scratch.socket); reconnecting")
        #expect(log.lines[1].hasPrefix("info: reconnected to syncd at \(scratch.socket) as session "))
        #expect(log.lines[1].hasSuffix(#"; put back 1 ephemeral key: "presence/door-panel""#))
        #expect(try await client.get("presence/door-panel").value == Data("true".utf8))
        await client.close()
        try await daemon.stop()
    }

    @Test func aResumePointCompactedWhileAwayBecomesOneResyncOfTheDifference() async throws {
        let scratch = try Scratch()
        var daemon = try await DaemonProcess(scratch)
        let client = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "resilient"))
        try await client.put("c/keep", json: "1")
        try await client.put("c/change", json: "1")
        try await client.put("c/remove", json: "1")
        let collector = Collector<WatchBatch>()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await batch in client.watch(prefixes: ["c/"]) where batch.kind != .progress { collector.add(batch) }
            }
            try await eventually("the snapshot") { collector.all.count == 1 }
            try await daemon.stop()

            // While the client is away, another syncd on another socket changes the same database
            // and compacts the history the client would resume from.
            let other = Scratch.sibling(of: scratch)
            let elsewhere = try await DaemonProcess(scratch, socketPath: other)
            let writer = try await SharedStateClient.connect(.init(socketPath: other, clientName: "writer"))
            try await writer.put("c/change", json: "2")
            try await writer.delete("c/remove")
            try await writer.put("c/new", json: "1")
            _ = try await writer.compact(through: try await writer.status().revision)
            await writer.close()
            try await elsewhere.stop()

            daemon = try await DaemonProcess(scratch)
            try await eventually("the resync") { collector.all.count == 2 }
            group.cancelAll()
        }
        let resync = collector.all[1]
        #expect(resync.kind == .resync)
        #expect(resync.changes.map(\.key) == ["c/change", "c/new", "c/remove"])
        #expect(resync.changes.map(\.type) == [.put, .put, .delete])
        await client.close()
        try await daemon.stop()
    }

    /// A database that went back (an older backup copied over it while syncd was stopped): the
    /// watch's resume point is ahead of syncd (FUTURE_REVISION), and the client starts again from a
    /// snapshot, delivered as the difference from what the watcher knew.
    @Test func aDatabaseThatWentBackBecomesOneResyncOfTheDifference() async throws {
        let scratch = try Scratch()
        var daemon = try await DaemonProcess(scratch)
        let client = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "resilient"))
        try await client.put("c/a", json: "1")
        try await client.put("c/b", json: "1")
        let older = scratch.file("older.sqlite")
        _ = try await client.backup(to: older)
        let collector = Collector<WatchBatch>()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await batch in client.watch(prefixes: ["c/"]) where batch.kind != .progress { collector.add(batch) }
            }
            try await eventually("the snapshot") { collector.all.count == 1 }
            try await client.put("c/a", json: "2")
            try await client.put("c/c", json: "1")
            try await eventually("both changes") { collector.all.count == 3 }
            try await daemon.stop()

            for suffix in ["", "-wal", "-shm", "-segments"] { try? FileManager.default.removeItem(atPath: scratch.database + suffix) }
            try FileManager.default.copyItem(atPath: older, toPath: scratch.database)
            daemon = try await DaemonProcess(scratch)
            try await eventually("the resync") { collector.all.count == 4 }
            group.cancelAll()
        }
        let resync = collector.all[3]
        #expect(resync.kind == .resync)
        #expect(resync.changes.map(\.key) == ["c/a", "c/c"])
        #expect(resync.changes.map(\.type) == [.put, .delete])
        #expect(try await client.get("c/a").value == Data("1".utf8))
        await client.close()
        try await daemon.stop()
    }
}

/// A log handler that keeps each line as "level: message", for a test to read.
final class CapturedLog: LogHandler, Sendable {
    private let captured = Mutex<[String]>([])
    var lines: [String] { captured.withLock { $0 } }

    var logLevel: Logger.Level {
        get { .trace }
        set {}
    }
    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    subscript(metadataKey _: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    func log(event: LogEvent) {
        captured.withLock { $0.append("\(event.level): \(event.message)") }
    }
}
