import Prometheus
import SharedStateWire
import Synchronization

/// syncd's metrics in Prometheus's text format, kept in a registry of this daemon's own (no
/// process-wide bootstrap, so daemons in one test process keep theirs apart), each with its help
/// text as `promtool check metrics` wants.
///
/// Counters and histograms are fed where things happen, once per commit or delivery round, never
/// per watcher; gauges of the state are read when the metrics are scraped (``render(_:)``).
package final class DaemonMetrics: Sendable {
    private let registry = PrometheusCollectorRegistry()

    let revisionsCommitted: Counter
    let commits: Counter
    let committedBytes: Counter
    let commitFailures: Counter
    let eventsDelivered: Counter
    let resyncs: Counter
    package let connectionsAccepted: Counter
    package let connectionsRefused: Counter
    let commitLatency: DurationHistogram
    let writesPerCommit: ValueHistogram
    let deliveryLatency: DurationHistogram
    /// Submissions counted for ``samplesDelivery()``.
    private let submissions = Atomic<UInt64>(0)

    private let keys: Gauge
    private let connections: Gauge
    private let watches: Gauge
    private let revision: Gauge
    private let compactedRevision: Gauge
    private let databaseBytes: Gauge
    private let writeAheadLogBytes: Gauge
    private let journalUnsyncedSeconds: Gauge
    private let journalUnsyncedBytes: Gauge
    private let journalLongestUnsyncedSeconds: Gauge
    private let journalSyncIntervalSeconds: Gauge
    private let journalUnmovedBytes: Gauge
    private let journalLateSyncs: Counter
    /// The late syncs the counter holds: the store counts them, the counter follows at each render.
    private let journalLateSyncsCounted = Mutex(0)

    init() {
        let registry = self.registry
        func counter(_ name: String, _ help: String) -> Counter {
            registry.makeCounter(descriptor: Self.described(name, help))
        }
        func gauge(_ name: String, _ help: String) -> Gauge {
            registry.makeGauge(descriptor: Self.described(name, help))
        }
        revisionsCommitted = counter("syncd_revisions_committed_total", "Revisions committed to the database.")
        commits = counter(
            "syncd_commits_total", "Group commits made durable, each one record of the change log; a group holds one or more revisions.")
        committedBytes = counter("syncd_committed_bytes_total", "Bytes of change-log records committed.")
        commitFailures = counter("syncd_commit_failures_total", "Group commits the database refused; their writes failed.")
        eventsDelivered = counter("syncd_events_delivered_total", "Watch event frames handed to connections.")
        resyncs = counter("syncd_resyncs_total", "Watches resynchronised after their connection fell behind.")
        connectionsAccepted = counter("syncd_connections_accepted_total", "Connections accepted.")
        connectionsRefused = counter("syncd_connections_refused_total", "Connections refused or pushed out by the connection limits.")
        commitLatency = registry.makeDurationHistogram(
            descriptor: Self.described(
                "syncd_commit_duration_seconds", "Time a group commit takes to become durable (its record appended to the change log)."),
            buckets: Self.latencyBuckets
        )
        deliveryLatency = registry.makeDurationHistogram(
            descriptor: Self.described(
                "syncd_write_to_delivery_seconds",
                "Sampled: time from a write reaching syncd to its revision's events written to each event loop's watchers."),
            buckets: Self.latencyBuckets
        )
        writesPerCommit = registry.makeValueHistogram(
            descriptor: Self.described("syncd_writes_per_commit", "Write requests per group commit."),
            buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
        )
        keys = gauge("syncd_keys", "Keys in the state.")
        connections = gauge("syncd_connections", "Open connections.")
        watches = gauge("syncd_watches", "Active watches.")
        revision = gauge("syncd_revision", "The current revision.")
        compactedRevision = gauge("syncd_compacted_revision", "Revisions up to this one are compacted out of the change log.")
        databaseBytes = gauge("syncd_database_bytes", "Size of the database file.")
        writeAheadLogBytes = gauge("syncd_write_ahead_log_bytes", "Size of the database's write-ahead log.")
        journalUnsyncedSeconds = gauge(
            "syncd_journal_unsynced_seconds", "How long the oldest acknowledged write not yet synced to disk has waited (0: none waits).")
        journalUnsyncedBytes = gauge("syncd_journal_unsynced_bytes", "Bytes of the journal not yet synced to disk.")
        journalLongestUnsyncedSeconds = gauge(
            "syncd_journal_longest_unsynced_seconds",
            "The longest any acknowledged write stayed unsynced since syncd started; with --durability normal, kept under the sync interval."
        )
        journalSyncIntervalSeconds = gauge(
            "syncd_journal_sync_interval_seconds",
            "The longest an acknowledged write may stay unsynced (--sync-interval; 0 with --durability full).")
        journalUnmovedBytes = gauge("syncd_journal_unmoved_bytes", "Bytes of the journal's records not yet moved into the database.")
        journalLateSyncs = counter(
            "syncd_journal_late_syncs_total",
            "Writes that waited for the disk because the journal had gone unsynced longer than the sync interval.")
    }

    /// From 50 µs, a commit of a few writes, to a second, a stall worth looking into.
    private static let latencyBuckets: [Duration] = [
        .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
        .milliseconds(2.5), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(100), .seconds(1),
    ]

    private static func described(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }

    /// Whether the write being submitted is one of the few (one in ``deliverySamplingInterval``)
    /// whose way to the watchers is timed for ``deliveryLatency``.
    package func samplesDelivery() -> Bool {
        submissions.wrappingAdd(1, ordering: .relaxed).oldValue % Self.deliverySamplingInterval == 0
    }

    /// One write in this many is timed to its delivery.
    static let deliverySamplingInterval: UInt64 = 64

    /// Counts a request answered with an error, by its code.
    package func countError(_ code: SharedStateError.Code) {
        registry.makeCounter(
            descriptor: Self.described("syncd_request_errors_total", "Requests answered with an error, by code."),
            labels: [("code", "\(code)")]
        ).increment()
    }

    /// Counts a write refused for breaking a schema, by the prefix whose schema it is; other
    /// errors are not counted here.
    package func countRefusal(_ error: SharedStateError) {
        guard error.code == .schemaViolation, let prefix = error.violations.first?.prefix else { return }
        registry.makeCounter(
            descriptor: Self.described(
                "syncd_schema_refusals_total", "Write requests refused for breaking a schema, by the prefix whose schema it is."),
            labels: [("prefix", prefix)]
        ).increment()
    }

    /// What a scrape reads of the state at that moment.
    package struct Snapshot {
        package var keys: Int
        package var connections: Int
        package var watches: Int
        package var revision: UInt64
        package var compactedRevision: UInt64
        package var databaseBytes: UInt64
        package var writeAheadLogBytes: UInt64
        /// A local store's journal, when it has one.
        package var durability: BackendStatus.Durability?

        package init(
            keys: Int, connections: Int, watches: Int, revision: UInt64, compactedRevision: UInt64, databaseBytes: UInt64,
            writeAheadLogBytes: UInt64, durability: BackendStatus.Durability? = nil
        ) {
            self.durability = durability
            self.keys = keys
            self.connections = connections
            self.watches = watches
            self.revision = revision
            self.compactedRevision = compactedRevision
            self.databaseBytes = databaseBytes
            self.writeAheadLogBytes = writeAheadLogBytes
        }
    }

    /// Every metric in Prometheus's text exposition format, the gauges set from `state` first.
    package func render(_ state: Snapshot) -> String {
        keys.set(Double(state.keys))
        connections.set(Double(state.connections))
        watches.set(Double(state.watches))
        revision.set(Double(state.revision))
        compactedRevision.set(Double(state.compactedRevision))
        databaseBytes.set(Double(state.databaseBytes))
        writeAheadLogBytes.set(Double(state.writeAheadLogBytes))
        if let durability = state.durability {
            journalUnsyncedSeconds.set(durability.unsyncedAge.seconds)
            journalUnsyncedBytes.set(Double(durability.unsyncedBytes))
            journalLongestUnsyncedSeconds.set(durability.longestUnsyncedAge.seconds)
            journalSyncIntervalSeconds.set(durability.syncInterval.seconds)
            journalUnmovedBytes.set(Double(durability.unmovedBytes))
            journalLateSyncsCounted.withLock { counted in
                if durability.lateSyncs > counted { journalLateSyncs.increment(by: Int64(durability.lateSyncs - counted)) }
                counted = max(counted, durability.lateSyncs)
            }
        }
        return registry.emitToString()
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    package var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
