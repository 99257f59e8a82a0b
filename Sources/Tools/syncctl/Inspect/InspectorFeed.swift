import Foundation
import NIOCore
import SyncClient
import Synchronization

/// Where the live stream's events go: an open `/api/stream` response.
protocol InspectorStreamSubscriber: AnyObject, Sendable {
    /// Sends one Server-Sent Event, already formatted; the bytes are shared by every stream.
    func send(_ event: ByteBuffer)
}

/// The page's live stream: one watch of every key this user may read, from now on, with
/// previous values, each revision sent to every open stream as a `revision` event; and once a
/// second the daemon's pace, sent as a `stats` event and kept for the plots, and each client's
/// writes refused for a schema since the last second, sent as a `refusal` event.
final class InspectorFeed: Sendable {
    /// One second of the daemon's pace.
    struct Sample: Sendable {
        var writesPerSecond: Double
        var eventsPerSecond: Double
    }

    /// How many samples the plots keep: ten minutes.
    static let keptSamples = 600
    /// A value larger than this goes out as `{"truncated": BYTES}`, so one large value does not
    /// stall the stream; the page asks for the key to see it.
    static let streamedValueLimit = 64 << 10

    private struct State {
        var subscribers: [ObjectIdentifier: any InspectorStreamSubscriber] = [:]
        var series: [Sample] = []
        /// Each connected client's events delivered at the last sample, and its rate since.
        var delivered: [UInt64: UInt64] = [:]
        var rates: [UInt64: Double] = [:]
        /// Each connected client's writes refused for a schema at the last sample.
        var refusals: [UInt64: UInt64]?
        var lastSample: (revision: UInt64, at: ContinuousClock.Instant)?
    }

    private let client: SharedStateClient
    let writers: InspectorWriters
    private let state = Mutex(State())

    init(client: SharedStateClient, writers: InspectorWriters) {
        self.client = client
        self.writers = writers
    }

    func subscribe(_ subscriber: any InspectorStreamSubscriber) {
        state.withLock { $0.subscribers[ObjectIdentifier(subscriber)] = subscriber }
    }

    func unsubscribe(_ subscriber: any InspectorStreamSubscriber) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: ObjectIdentifier(subscriber)) }
    }

    /// The samples, oldest first.
    var series: [Sample] { state.withLock { $0.series } }

    /// A connected client's events delivered per second over the last second.
    func eventsPerSecond(of session: UInt64) -> Double { state.withLock { $0.rates[session] ?? 0 } }

    /// Watches and samples until cancelled.
    func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.relayRevisions() }
            group.addTask { await self.sample() }
            await group.waitForAll()
        }
    }

    private func broadcast(_ event: String) {
        let subscribers = state.withLock { Array($0.subscribers.values) }
        guard !subscribers.isEmpty else { return }
        let bytes = ByteBuffer(string: event)
        for subscriber in subscribers { subscriber.send(bytes) }
    }

    static func event(_ name: String, _ json: String) -> String {
        "event: \(name)\ndata: \(json)\n\n"
    }

    private func relayRevisions() async {
        while !Task.isCancelled {
            do {
                for try await batch in client.watch(prefixes: [""], start: .now, previousValues: true) {
                    // Nothing is named or encoded while no page is open.
                    guard state.withLock({ !$0.subscribers.isEmpty }) else { continue }
                    switch batch.kind {
                    case .changes:
                        let writer = await writers.name(of: batch.writerSession, revision: batch.revision, key: batch.changes.first?.key)
                        broadcast(
                            Self.event("revision", InspectorJSON.revision(batch, writer: writer, valueLimit: Self.streamedValueLimit)))
                    case .resync:
                        // This stream fell behind and syncd folded what it missed: the page reloads.
                        broadcast(Self.event("resync", InspectorJSON.object(["revision": InspectorJSON.number(batch.revision)])))
                    default:
                        break
                    }
                }
            } catch {
                let reason = (error as? SharedStateError)?.message ?? "\(error)"
                broadcast(Self.event("notice", InspectorJSON.error("the live stream stopped: \(reason); starting it again")))
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    private func sample() async {
        while !Task.isCancelled {
            if let status = try? await client.status(), let clients = try? await client.clients() {
                writers.note(clients)
                let stats: String? = state.withLock { state in
                    let now = ContinuousClock.now
                    var rates: [UInt64: Double] = [:]
                    var sample: Sample?
                    if let last = state.lastSample {
                        let elapsed = (now - last.at).components
                        let seconds = max(0.001, Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18)
                        for info in clients {
                            let before = state.delivered[info.sessionID] ?? info.eventsDelivered
                            rates[info.sessionID] = Double(info.eventsDelivered &- min(before, info.eventsDelivered)) / seconds
                        }
                        sample = Sample(
                            writesPerSecond: Double(status.revision &- min(last.revision, status.revision)) / seconds,
                            eventsPerSecond: rates.values.reduce(0, +))
                    }
                    state.delivered = Dictionary(clients.map { ($0.sessionID, $0.eventsDelivered) }, uniquingKeysWith: { a, _ in a })
                    state.rates = rates
                    state.lastSample = (status.revision, now)
                    guard let sample else { return nil }
                    state.series.append(sample)
                    if state.series.count > Self.keptSamples { state.series.removeFirst(state.series.count - Self.keptSamples) }
                    return InspectorJSON.object([
                        "revision": InspectorJSON.number(status.revision),
                        "writesPerSecond": InspectorJSON.number(sample.writesPerSecond),
                        "eventsPerSecond": InspectorJSON.number(sample.eventsPerSecond),
                    ])
                }
                if let stats { broadcast(Self.event("stats", stats)) }
                for refusal in newRefusals(among: clients) { broadcast(Self.event("refusal", refusal)) }
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// A `refusal` event for each client refused a write for a schema since the last sample
    /// (none at the first: what came before the inspector is in the clients table's count).
    private func newRefusals(among clients: [ClientInfo]) -> [String] {
        state.withLock { state in
            let known = state.refusals
            var events: [String] = []
            for info in clients {
                let before = known.map { $0[info.sessionID] ?? 0 } ?? info.schemaRefusals
                guard info.schemaRefusals > before, let violation = info.lastSchemaRefusal else { continue }
                events.append(
                    InspectorJSON.object([
                        "writer": InspectorJSON.writer(InspectorWriters.Name(sessionID: info.sessionID, name: info.name, pid: info.pid)),
                        "count": InspectorJSON.number(info.schemaRefusals - before),
                        "total": InspectorJSON.number(info.schemaRefusals),
                        "latest": JSONObject.violation(violation).rendered,
                    ]))
            }
            state.refusals = Dictionary(clients.map { ($0.sessionID, $0.schemaRefusals) }, uniquingKeysWith: { a, _ in a })
            return events
        }
    }
}
