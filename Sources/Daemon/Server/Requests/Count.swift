import SharedStateWire
import SyncEngine

/// `count`: how many keys start with a prefix, of those the caller may read (etcd's
/// `get --prefix --count-only`); at once, or off the event loop when the caller may read only
/// some of many keys, each of which is then judged.
extension Sharedstate_V1_CountRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        try KeyRules.validatePrefix(prefix, limits: call.limits)
        try session.requireSomeRead(under: [prefix], call.access)
        switch session.engine.count(prefix: prefix, readable: session.readFilter(call.access)) {
        case .counted(let counting):
            session.respond(call.id) { $0.count = Self.response(counting) }
            return .next
        case .tooLarge(let large):
            return session.suspend(call.id) { () async throws(SharedStateError) in
                .count(Self.response(try await BackgroundWork.run { () throws(SharedStateError) in large.count() }))
            }
        }
    }

    private static func response(_ counting: StateEngine.Counting) -> Sharedstate_V1_CountResponse {
        .with {
            $0.count = UInt64(counting.count)
            $0.revision = counting.revision
        }
    }
}
