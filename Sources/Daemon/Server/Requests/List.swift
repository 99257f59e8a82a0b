import SharedStateWire
import SyncEngine

/// `list`: the entries under a prefix that the caller may read, in key order; at once when
/// they are few, else read and encoded on the thread pool.
extension Sharedstate_V1_ListRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        try KeyRules.validatePrefix(prefix, limits: call.limits)
        try session.requireSomeRead(under: [prefix], call.access)
        let outcome = session.engine.list(
            prefix: prefix,
            start: start,
            limit: limit == 0 ? nil : Int(limit),
            readable: session.readFilter(call.access)
        )
        switch outcome {
        case .listed(let listing):
            session.respond(call.id) { $0.list = Self.response(listing) }
            return .next
        case .tooLarge(let large):
            // Read and encoded on the thread pool: a million entries take a second.
            let (id, writer) = (call.id, session.writer)
            return session.suspend(id) { () async throws(SharedStateError) in
                let frame = try await BackgroundWork.run { () throws(SharedStateError) in
                    ClientSession.responseFrame(id) { $0.list = Self.response(large.read()) }
                }
                writer.send([frame])
                return nil
            }
        }
    }

    private static func response(_ listing: StateEngine.Listing) -> Sharedstate_V1_ListResponse {
        .with {
            $0.entries = listing.entries.map(\.wireValue)
            $0.revision = listing.revision
            $0.truncated = listing.hasMore
        }
    }
}
