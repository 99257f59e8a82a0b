import ArgumentParser
import Foundation
import SyncClient
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

struct TopCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "top",
        abstract: "A live view of syncd: writes/s per client and per top-level prefix, events/s, connections, commit latency.",
        discussion: """
            Refreshed every --interval seconds, on a cleared screen on a terminal and as plain \
            blocks of lines otherwise. Writes are counted from a watch on every key, so who wrote \
            them comes from each revision's writer; events, resyncs and commit latency from syncd's \
            metrics. Needs syncd's own user or root (for the clients and the metrics).
            """
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: "Seconds between refreshes.")
    var interval: Double = 1

    @Option(help: "Exit after this many refreshes.")
    var count: Int?

    func validate() throws {
        if interval < 0.1 { throw ValidationError("--interval must be at least 0.1 seconds") }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
    }

    /// Writes seen since the last refresh, by writer session and by top-level prefix.
    private struct Tally: Sendable {
        var bySession: [UInt64: Int] = [:]
        var byPrefix: [String: Int] = [:]
    }

    /// The tally the watch adds to and each refresh takes.
    private final class Counts: Sendable {
        let tally = Mutex(Tally())
    }

    func run() async throws {
        let client = try await options.connect()
        let counts = Counts()
        let isTerminal = isatty(STDOUT_FILENO) == 1
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await batch in client.watch(prefixes: [""], start: .now) where batch.kind == .changes {
                    counts.tally.withLock { tally in
                        tally.bySession[batch.writerSession, default: 0] += 1
                        for change in batch.changes {
                            let prefix = change.key.split(separator: "/", maxSplits: 1).first.map(String.init) ?? change.key
                            tally.byPrefix[prefix, default: 0] += 1
                        }
                    }
                }
            }
            group.addTask {
                var previous = try await CommandFailure.exitOnError { try await Sample.take(from: client) }
                var refreshes = 0
                while count.map({ refreshes < $0 }) ?? true {
                    try await Task.sleep(for: .milliseconds(Int(interval * 1000)))
                    let sample = try await CommandFailure.exitOnError { try await Sample.take(from: client) }
                    let seen = counts.tally.withLock { tally in
                        defer { tally = Tally() }
                        return tally
                    }
                    let seconds = sample.time.timeIntervalSince(previous.time)
                    if isTerminal { print("\u{1B}[H\u{1B}[2J", terminator: "") }
                    print(render(sample, since: previous, seconds: seconds, seen: seen).joined(separator: "\n"))
                    if !isTerminal { print("") }
                    fflush(nil)  // nil flushes every stream, stdout included
                    previous = sample
                    refreshes += 1
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    private func render(_ now: Sample, since before: Sample, seconds: Double, seen: Tally) -> [String] {
        func rate(_ value: Double) -> String { String(format: "%.0f", value / max(seconds, 0.001)) }
        let revisions = Double(now.status.revision - min(now.status.revision, before.status.revision))
        let events = now.metric("syncd_events_delivered_total") - before.metric("syncd_events_delivered_total")
        let commits = now.metric("syncd_commit_duration_seconds_count") - before.metric("syncd_commit_duration_seconds_count")
        let commitSeconds = now.metric("syncd_commit_duration_seconds_sum") - before.metric("syncd_commit_duration_seconds_sum")
        let latency = commits > 0 ? String(format: "%.0f µs", commitSeconds / commits * 1e6) : "–"
        let timed = now.metric("syncd_write_to_delivery_seconds_count") - before.metric("syncd_write_to_delivery_seconds_count")
        let timedSeconds = now.metric("syncd_write_to_delivery_seconds_sum") - before.metric("syncd_write_to_delivery_seconds_sum")
        let delivery = timed > 0 ? String(format: "%.0f µs", timedSeconds / timed * 1e6) : "–"
        let backlogged = now.clients.filter { $0.queuedBytes > 0 }.count
        var lines = [
            "syncd at revision \(now.status.revision): \(now.status.keys) keys, \(now.status.clients) connections, "
                + "\(now.status.watches) watches, \(backlogged) backlogged",
            "writes/s \(rate(revisions))   events/s \(rate(events))   resyncs \(Int(now.metric("syncd_resyncs_total")))   "
                + "commit \(latency), write to delivery \(delivery) on average",
            "",
            pad("CLIENT", 24) + pad("SESSION", 12, right: true) + pad("PID", 8, right: true) + pad("WRITES/S", 10, right: true)
                + pad("EVENTS/S", 10, right: true) + pad("WATCHES", 9, right: true) + pad("QUEUED", 10, right: true),
        ]
        let deliveredBefore = Dictionary(before.clients.map { ($0.sessionID, $0.eventsDelivered) }, uniquingKeysWith: { first, _ in first })
        let sessions = Set(now.clients.map(\.sessionID)).union(seen.bySession.keys)
        let byID = Dictionary(now.clients.map { ($0.sessionID, $0) }, uniquingKeysWith: { first, _ in first })
        for session in sessions.sorted(by: { (seen.bySession[$0] ?? 0, $1) > (seen.bySession[$1] ?? 0, $0) }) {
            let info = byID[session]
            let name = session == 0 ? "syncd" : info?.name ?? "(gone)"
            let delivered = info.map { $0.eventsDelivered - min($0.eventsDelivered, deliveredBefore[session] ?? 0) } ?? 0
            lines.append(
                pad(name.isEmpty ? "(no Hello)" : name, 24) + pad("\(session)", 12, right: true) + pad("\(info?.pid ?? 0)", 8, right: true)
                    + pad(rate(Double(seen.bySession[session] ?? 0)), 10, right: true) + pad(rate(Double(delivered)), 10, right: true)
                    + pad("\(info?.watches ?? 0)", 9, right: true) + pad("\(info?.queuedBytes ?? 0)", 10, right: true))
        }
        lines += ["", pad("PREFIX", 24) + pad("WRITES/S", 10, right: true)]
        for (prefix, writes) in seen.byPrefix.sorted(by: { ($0.value, $1.key) > ($1.value, $0.key) }) {
            lines.append(pad(prefix, 24) + pad(rate(Double(writes)), 10, right: true))
        }
        return lines
    }

    private func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let room = String(repeating: " ", count: max(1, width - text.count))
        return right ? room + text : text + room
    }
}

/// What `top` reads from syncd at each refresh.
private struct Sample {
    var time: Date
    var status: ServerStatus
    var clients: [ClientInfo]
    var metrics: [String: Double]

    static func take(from client: SharedStateClient) async throws(SharedStateError) -> Sample {
        let status = try await client.status()
        let clients = try await client.clients()
        var metrics: [String: Double] = [:]
        for line in try await client.metrics().split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let value = Double(parts[1]) { metrics[String(parts[0]), default: 0] += value }
        }
        return Sample(time: Date(), status: status, clients: clients, metrics: metrics)
    }

    func metric(_ name: String) -> Double { metrics[name] ?? 0 }
}
