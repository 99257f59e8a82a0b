import Foundation
import NIOCore
import SharedStateWire

/// Requests answered from the committed state or the change log: get, list, status, history.
extension ClientSession {
    /// Answers a get at once from the committed state; a consistent one once the backend has
    /// answered.
    func get(_ get: Sharedstate_V1_GetRequest, _ call: Call) throws(SharedStateError) -> Step {
        let (id, limits, access) = (call.id, call.limits, call.access)
        try KeyRules.validateKey(get.key, limits: limits)
        try requireRead(get.key, access)
        if get.consistent {
            let (engine, key) = (self.engine, get.key)
            return suspend(id) { () async throws(SharedStateError) in
                let (entry, revision) = try await engine.consistentEntry(key)
                return .get(try Self.getResponse(key, entry, revision))
            }
        }
        let (entry, revision) = engine.entry(get.key)
        let response = try Self.getResponse(get.key, entry, revision)
        respond(id) { $0.get = response }
        return .next
    }

    /// The answer to a get of `key`, which `entry` holds at `revision`; `notFound` for none.
    private static func getResponse(
        _ key: String, _ entry: Entry?, _ revision: UInt64
    ) throws(SharedStateError) -> Sharedstate_V1_GetResponse {
        guard let entry else { throw RequestRules.notFound(key) }
        return .with {
            $0.entry = entry.wireValue
            $0.revision = revision
        }
    }

    /// Answers a list: at once when it is small, else read and encoded on the thread pool.
    func list(_ list: Sharedstate_V1_ListRequest, _ call: Call) throws(SharedStateError) -> Step {
        let (id, limits, access) = (call.id, call.limits, call.access)
        try KeyRules.validatePrefix(list.prefix, limits: limits)
        try requireSomeRead(under: [list.prefix], access)
        let outcome = engine.list(
            prefix: list.prefix,
            limit: list.limit == 0 ? nil : Int(list.limit),
            readable: readFilter(access)
        )
        switch outcome {
        case .listed(let listing):
            respond(id) { $0.list = Self.listResponse(listing) }
            return .next
        case .tooLarge(let large):
            // Read and encoded on the thread pool: a million entries take a second.
            let writer = self.writer
            return suspend(id) { () async throws(SharedStateError) in
                let frame = try await BackgroundWork.run { () throws(SharedStateError) in
                    Self.responseFrame(id) { $0.list = Self.listResponse(large.read()) }
                }
                writer.send([frame])
                return nil
            }
        }
    }

    /// Answers `status`.
    func status(_ call: Call) -> Step {
        let id = call.id
        let status = environment.status()
        respond(id) { $0.status = status }
        return .next
    }

    /// Answers a key's history, read from the change log off the event loop.
    func history(_ history: Sharedstate_V1_HistoryRequest, _ call: Call) throws(SharedStateError) -> Step {
        let (id, limits, access) = (call.id, call.limits, call.access)
        try KeyRules.validateKey(history.key, limits: limits)
        try requireRead(history.key, access)
        let (engine, key, limit) = (self.engine, history.key, history.limit == 0 ? nil : Int(history.limit))
        // Anyone who may read the key sees who wrote it; the kernel's ids only administrators.
        let showsCredentials = access.isUnrestricted
        return suspend(id) { () async throws(SharedStateError) in
            let result = try await engine.history(of: key, limit: limit)
            return .history(
                .with {
                    $0.changes = result.changes.map(\.change.wireValue)
                    $0.origins = result.changes.map { logged in
                        .with {
                            $0.cause = logged.cause
                            $0.writer = .with {
                                $0.sessionID = logged.writerSession
                                $0.clientName = logged.clientName
                                if showsCredentials, let writer = logged.writer {
                                    $0.pid = writer.pid
                                    $0.uid = writer.uid
                                    $0.gid = writer.gid
                                }
                            }
                        }
                    }
                    $0.compactedRevision = result.compactedRevision
                }
            )
        }
    }

    private static func listResponse(_ listing: StateEngine.Listing) -> Sharedstate_V1_ListResponse {
        .with {
            $0.entries = listing.entries.map(\.wireValue)
            $0.revision = listing.revision
            $0.truncated = listing.hasMore
        }
    }
}
