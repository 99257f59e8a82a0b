import SharedStateWire
import SyncEngine

/// `exists`: which of some keys exist, with their versions, at one revision of the published
/// state; no values travel.
extension Sharedstate_V1_ExistsRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        try RequestRules.validateExistsKeys(keys, limits: call.limits)
        for key in keys { try session.requireRead(key, call.access) }
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
