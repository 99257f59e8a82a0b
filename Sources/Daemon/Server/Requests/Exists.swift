import SharedStateWire
import SyncEngine

/// `exists`: which of some keys exist, with their versions, at one revision of the published
/// state; no values travel.
extension Sharedstate_V1_ExistsRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        guard keys.count <= call.limits.maxTransactionOperations else {
            throw SharedStateError(
                .invalidArgument, "exists names \(keys.count) keys, more than the \(call.limits.maxTransactionOperations) a request may")
        }
        for key in keys {
            try KeyRules.validateKey(key, limits: call.limits)
            try session.requireRead(key, call.access)
        }
        let (versions, revision) = session.engine.versions(of: keys)
        session.respond(call.id) {
            $0.exists = .with {
                $0.versions = versions
                $0.revision = revision
            }
        }
        return .next
    }
}
