import SharedStateWire
import SyncEngine

/// `metrics`: the metrics in Prometheus's text format, for administrators; at once, since
/// rendering them reads counters and a few sizes.
extension Sharedstate_V1_MetricsRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        try session.requireAdministrator("read the metrics", call.access)
        let text = MetricsText.render(engine: session.engine, connections: session.environment.connections.count)
        session.respond(call.id) { $0.metrics = .with { $0.text = text } }
        return .next
    }
}
