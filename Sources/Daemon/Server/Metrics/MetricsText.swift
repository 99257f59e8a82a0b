import SyncEngine

/// The metrics in Prometheus's text format, for `syncctl metrics` and `--metrics-address`: the
/// engine's counters, with its sizes and the number of connections read now.
package enum MetricsText {
    static func render(engine: StateEngine, connections: Int) -> String {
        let statistics = engine.statistics
        return engine.metrics.render(
            .init(
                keys: statistics.keys, connections: connections, watches: statistics.watches,
                revision: statistics.revision, compactedRevision: statistics.compactedRevision,
                databaseBytes: statistics.backend.databaseBytes, writeAheadLogBytes: statistics.backend.writeAheadLogBytes,
                durability: statistics.backend.durability))
    }
}
