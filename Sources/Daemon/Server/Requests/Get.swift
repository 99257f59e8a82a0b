import SharedStateWire
import SyncEngine

/// `get`: one key's entry, from the published state at once; a consistent one once the backend
/// has answered.
extension Sharedstate_V1_GetRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        try KeyRules.validateKey(key, limits: call.limits)
        try session.requireRead(key, call.access)
        let (engine, key) = (session.engine, key)
        if consistent {
            return session.suspend(call.id) { () async throws(SharedStateError) in
                let (entry, revision) = try await engine.consistentEntry(key)
                return .get(try Self.response(key, entry, revision))
            }
        }
        let (entry, revision) = engine.entry(key)
        let response = try Self.response(key, entry, revision)
        session.respond(call.id) { $0.get = response }
        return .next
    }

    /// The answer to a get of `key`, which `entry` holds at `revision`; `notFound` for none.
    private static func response(_ key: String, _ entry: Entry?, _ revision: UInt64) throws(SharedStateError) -> Sharedstate_V1_GetResponse
    {
        guard let entry else { throw RequestRules.notFound(key) }
        return .with {
            $0.entry = entry.wireValue
            $0.revision = revision
        }
    }
}
