import Foundation
import SyncClient

/// The inspector's JSON endpoints (docs/INSPECTOR.md), each answered through the one connection
/// to syncd, as the user who runs `syncctl inspect`: syncd's access policy decides what they see.
struct InspectorAPI: Sendable {
    /// An answer: status and JSON text.
    struct Answer: Sendable {
        var status: Int
        var json: String

        static func ok(_ json: String) -> Answer { Answer(status: 200, json: json) }
        static func failure(_ status: Int, _ message: String, compactedRevision: UInt64? = nil) -> Answer {
            Answer(status: status, json: InspectorJSON.error(message, compactedRevision: compactedRevision))
        }
    }

    let client: SharedStateClient
    let feed: InspectorFeed

    /// The most children `children` and entries `keys` return at once.
    static let pageSize = 1_000
    /// The most entries `state` returns.
    static let stateLimit = 10_000
    /// The most revisions `recent` returns: as many as the timeline keeps.
    static let recentLimit = 500
    /// How many of the latest revisions `client` looks through for the client's writes, and how
    /// many of those it returns.
    static let clientWritesScanned: UInt64 = 5_000
    static let clientWritesListed = 50

    func answer(path: String, query: [String: String]) async -> Answer {
        do throws(SharedStateError) {
            switch path {
            case "/api/status": return try await status()
            case "/api/children": return try await children(under: query["prefix"] ?? "", after: query["after"])
            case "/api/keys": return try await keys(under: query["prefix"] ?? "", limit: query["limit"])
            case "/api/key":
                guard let key = query["key"] else { return .failure(400, "key is missing: /api/key?key=KEY") }
                return try await entry(of: key)
            case "/api/revision":
                guard let revision = query["revision"].flatMap(UInt64.init), revision > 0 else {
                    return .failure(400, "revision must be a positive number: /api/revision?revision=N")
                }
                return try await self.revision(revision, under: query["prefix"] ?? "")
            case "/api/recent": return try await recent(limit: query["limit"])
            case "/api/client":
                guard let session = query["session"].flatMap(UInt64.init), session > 0 else {
                    return .failure(400, "session must be a positive number: /api/client?session=N")
                }
                return try await clientDetail(session)
            case "/api/state":
                guard let revision = query["revision"].flatMap(UInt64.init) else {
                    return .failure(400, "revision must be a number: /api/state?revision=N&prefix=P")
                }
                return try await state(at: revision, under: query["prefix"] ?? "")
            case "/api/clients": return try await clients()
            default: return .failure(404, "no such endpoint: \(path)")
            }
        } catch {
            switch error.code {
            case .invalidArgument, .tooLarge: return .failure(400, error.message)
            case .notFound: return .failure(404, error.message)
            case .permissionDenied: return .failure(403, error.message)
            case .compacted: return .failure(410, error.message)
            default: return .failure(502, "syncd: \(error.message)")
            }
        }
    }

    private func status() async throws(SharedStateError) -> Answer {
        let status = try await client.status()
        return .ok(
            InspectorJSON.object([
                "revision": InspectorJSON.number(status.revision),
                "compactedRevision": InspectorJSON.number(status.compactedRevision),
                "keys": InspectorJSON.number(status.keys),
                "clients": InspectorJSON.number(status.clients),
                "watches": InspectorJSON.number(status.watches),
                "serverVersion": InspectorJSON.string(status.serverVersion),
                "uptimeSeconds": InspectorJSON.number(status.uptimeSeconds),
                "socket": InspectorJSON.string(client.socketPath),
            ]))
    }

    /// One level of the key tree under `prefix`: each name once, whether it is a key, a folder
    /// (keys lie under `name/`) or both. Lists one key per folder and skips the rest of it by
    /// starting past its last `/` raised to `0`: a level costs a request per folder and one per
    /// 64 plain keys, however many keys lie below.
    private func children(under prefix: String, after: String?) async throws(SharedStateError) -> Answer {
        struct Child {
            var isKey = false
            var folderCount: Int?
        }
        var children: [String: Child] = [:]
        var order: [String] = []
        var start = after ?? prefix
        var revision: UInt64 = 0
        var next: String?
        scan: while true {
            let page = try await client.list(prefix: prefix, startingAt: start, limit: 64)
            revision = max(revision, page.revision)
            for entry in page.entries {
                if children.count >= Self.pageSize {
                    next = start
                    break scan
                }
                let rest = entry.key.utf8.dropFirst(prefix.utf8.count)
                if let slash = rest.firstIndex(of: UInt8(ascii: "/")) {
                    let name = String(decoding: rest[..<slash], as: UTF8.self)
                    let folder = prefix + name + "/"
                    if children[name] == nil { order.append(name) }
                    children[name, default: Child()].folderCount = try await client.count(prefix: folder).count
                    start = prefix + name + "0"
                    continue scan
                }
                let name = String(decoding: rest, as: UTF8.self)
                if children[name] == nil { order.append(name) }
                children[name, default: Child()].isKey = true
                start = entry.key + "\u{0}"
            }
            if !page.isTruncated { break }
        }
        let sorted = order.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        let items = sorted.map { name in
            let child = children[name]!
            return InspectorJSON.object([
                "name": InspectorJSON.string(name),
                "path": InspectorJSON.string(child.folderCount != nil && !child.isKey ? prefix + name + "/" : prefix + name),
                "isKey": InspectorJSON.bool(child.isKey),
                "isFolder": InspectorJSON.bool(child.folderCount != nil),
                "count": InspectorJSON.number(child.folderCount ?? 0),
            ])
        }
        return .ok(
            InspectorJSON.object([
                "prefix": InspectorJSON.string(prefix),
                "revision": InspectorJSON.number(revision),
                "children": InspectorJSON.array(items),
                "truncated": InspectorJSON.bool(next != nil),
                "next": next.map(InspectorJSON.string) ?? InspectorJSON.null,
            ]))
    }

    private func keys(under prefix: String, limit: String?) async throws(SharedStateError) -> Answer {
        let limit = min(Self.pageSize, max(1, limit.flatMap(Int.init) ?? 200))
        let listed = try await client.list(prefix: prefix, limit: limit)
        return .ok(
            InspectorJSON.object([
                "entries": InspectorJSON.array(listed.entries.map { JSONObject.entry($0).rendered }),
                "revision": InspectorJSON.number(listed.revision),
                "truncated": InspectorJSON.bool(listed.isTruncated),
            ]))
    }

    private func entry(of key: String) async throws(SharedStateError) -> Answer {
        let entry = try await client.get(key)
        var owner = InspectorJSON.null
        if entry.ephemeralSession != 0 {
            let name = await feed.writers.name(of: entry.ephemeralSession, revision: entry.modRevision, key: key)
            owner = InspectorJSON.writer(name)
        }
        let history = try? await client.history(of: key, limit: 20)
        let changes = zip(history?.changes ?? [], history?.origins ?? []).reversed().map { change, origin in
            InspectorJSON.object([
                "revision": InspectorJSON.number(change.revision),
                "type": InspectorJSON.string(change.type == .put ? "put" : "delete"),
                "writer": InspectorJSON.writer(
                    InspectorWriters.Name(sessionID: origin.writer.sessionID, name: origin.writer.clientName, pid: origin.writer.pid)),
                "cause": InspectorJSON.string(origin.cause),
            ])
        }
        // A user who may not read `$schemas/` sees no schema rather than no key.
        let schema = (try? await client.schema(governing: key)).flatMap { $0 }
        return .ok(
            InspectorJSON.object([
                "entry": JSONObject.entry(entry).rendered,
                "owner": owner,
                "history": InspectorJSON.array(changes),
                "schema": schema.map {
                    InspectorJSON.object([
                        "prefix": InspectorJSON.string($0.prefix),
                        "key": InspectorJSON.string(SchemaKeys.key(forPrefix: $0.prefix)),
                        "version": InspectorJSON.number($0.version),
                        "document": InspectorJSON.value($0.document),
                    ])
                } ?? InspectorJSON.null,
            ]))
    }

    /// One revision (its changes under `prefix`), from a replay of the change log from the
    /// revision before it.
    private func revision(_ revision: UInt64, under prefix: String) async throws(SharedStateError) -> Answer {
        let status = try await client.status()
        if revision > status.revision {
            return .failure(404, "revision \(revision) is after the current revision \(status.revision)")
        }
        if revision <= status.compactedRevision {
            return compactedAway(revision, compactedRevision: status.compactedRevision)
        }
        let replayed = try await replay(after: revision - 1, under: prefix, through: revision, previousValues: true)
        guard let batch = replayed.first, batch.revision == revision else {
            let keys = prefix.isEmpty ? "no key you may read" : "no key under \(KeyRules.quoted(prefix)) you may read"
            return .failure(404, "revision \(revision) changed \(keys)")
        }
        let writer = await feed.writers.name(of: batch.writerSession, revision: revision, key: batch.changes.first?.key)
        return .ok(InspectorJSON.revision(batch, writer: writer))
    }

    /// The latest `limit` revisions the change log holds (at most ``recentLimit``), oldest
    /// first, as the live stream sends them: the timeline opens on them.
    private func recent(limit: String?) async throws(SharedStateError) -> Answer {
        let limit = UInt64(min(Self.recentLimit, max(1, limit.flatMap(Int.init) ?? Self.recentLimit)))
        let status = try await client.status()
        let start = max(status.compactedRevision, status.revision > limit ? status.revision - limit : 0)
        var revisions: [String] = []
        for batch in try await replay(after: start, through: status.revision, previousValues: true) {
            let writer = await feed.writers.name(of: batch.writerSession, revision: batch.revision, key: batch.changes.first?.key)
            revisions.append(InspectorJSON.revision(batch, writer: writer, valueLimit: InspectorFeed.streamedValueLimit))
        }
        return .ok(
            InspectorJSON.object([
                "revision": InspectorJSON.number(status.revision),
                "compactedRevision": InspectorJSON.number(status.compactedRevision),
                "revisions": InspectorJSON.array(revisions),
            ]))
    }

    /// The revisions after `start` up to `through` with changes under `prefix` that the change
    /// log holds, oldest first: a watch replaying the log, ended at `through` or at syncd's
    /// progress notice (the end of the replay). `compacted` when the log no longer starts there.
    private func replay(
        after start: UInt64, under prefix: String = "", through: UInt64, previousValues: Bool
    ) async throws(SharedStateError) -> [WatchBatch] {
        guard start < through else { return [] }
        var batches: [WatchBatch] = []
        do {
            for try await batch in client.watch(prefixes: [prefix], start: .after(start), previousValues: previousValues) {
                switch batch.kind {
                case .changes where batch.revision <= through: batches.append(batch)
                case .changes, .progress: return batches
                default: continue
                }
                if batch.revision >= through { return batches }
            }
        } catch let error as SharedStateError {
            throw error
        } catch {
            throw SharedStateError(.unavailable, "\(error)")
        }
        return batches
    }

    /// The entries under `prefix` at `revision`: those of now, with every change after
    /// `revision` undone, newest first, from a replay of the change log with previous values.
    private func state(at revision: UInt64, under prefix: String) async throws(SharedStateError) -> Answer {
        let now = try await client.list(prefix: prefix, limit: Self.stateLimit)
        let status = try await client.status()
        if revision > now.revision {
            return .failure(404, "revision \(revision) is after the current revision \(now.revision)")
        }
        if revision < status.compactedRevision {
            return compactedAway(revision, compactedRevision: status.compactedRevision)
        }
        var entries = Dictionary(now.entries.map { ($0.key, $0) }, uniquingKeysWith: { _, last in last })
        var unknown = 0
        let later: [WatchBatch]
        do {
            later = try await replay(after: revision, under: prefix, through: now.revision, previousValues: true)
        } catch  where error.code == .compacted {
            return compactedAway(revision, compactedRevision: status.compactedRevision)
        }
        for batch in later.reversed() {
            for change in batch.changes.reversed() {
                switch change.previous {
                case .entry(let entry): entries[change.key] = entry
                case .absent: entries[change.key] = nil
                case .unknown: unknown += 1
                }
            }
        }
        let sorted = entries.values.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
        return .ok(
            InspectorJSON.object([
                "revision": InspectorJSON.number(revision),
                "currentRevision": InspectorJSON.number(now.revision),
                "entries": InspectorJSON.array(sorted.prefix(Self.stateLimit).map { JSONObject.entry($0).rendered }),
                "truncated": InspectorJSON.bool(now.isTruncated || sorted.count > Self.stateLimit),
                "unknownPrevious": InspectorJSON.number(unknown),
            ]))
    }

    /// A connected client as the clients table shows it.
    private func clientRow(_ info: ClientInfo) -> String {
        InspectorJSON.object([
            "sessionID": InspectorJSON.number(info.sessionID),
            "name": InspectorJSON.string(info.name),
            "pid": InspectorJSON.number(info.pid),
            "uid": InspectorJSON.number(info.uid),
            "watches": InspectorJSON.number(info.watches),
            "eventsDelivered": InspectorJSON.number(info.eventsDelivered),
            "eventsPerSecond": InspectorJSON.number(feed.eventsPerSecond(of: info.sessionID)),
            "queuedBytes": InspectorJSON.number(info.queuedBytes),
            "resyncs": InspectorJSON.number(info.resyncs),
            "schemaRefusals": InspectorJSON.number(info.schemaRefusals),
            "lastSchemaRefusal": info.lastSchemaRefusal.map { JSONObject.violation($0).rendered } ?? InspectorJSON.null,
            "connectedSeconds": InspectorJSON.number(info.connectedSeconds),
            "admission": InspectorJSON.string(info.admission.description),
        ])
    }

    /// One connected client: its row, its watches, its ephemeral keys, and its latest writes
    /// among the change log's latest ``clientWritesScanned`` revisions, newest first.
    private func clientDetail(_ session: UInt64) async throws(SharedStateError) -> Answer {
        let clients = try await client.clients(details: true)
        feed.writers.note(clients)
        guard let info = clients.first(where: { $0.sessionID == session }) else {
            return .failure(404, "no client with session \(session) is connected")
        }
        let status = try await client.status()
        let start = max(
            status.compactedRevision, status.revision > Self.clientWritesScanned ? status.revision - Self.clientWritesScanned : 0)
        let written = try await replay(after: start, through: status.revision, previousValues: false).filter { $0.writerSession == session }
        let writes = written.suffix(Self.clientWritesListed).reversed().map { batch in
            InspectorJSON.object([
                "revision": InspectorJSON.number(batch.revision),
                "cause": InspectorJSON.string(batch.cause),
                "keys": InspectorJSON.array(batch.changes.prefix(5).map { InspectorJSON.string($0.key) }),
                "keyCount": InspectorJSON.number(batch.changes.count),
                "deletes": InspectorJSON.number(batch.changes.count { $0.type == .delete }),
            ])
        }
        let watches = info.watchList.map { JSONObject.watch($0).rendered }
        return .ok(
            InspectorJSON.object([
                "client": clientRow(info),
                "watchList": InspectorJSON.array(watches),
                "ephemeralKeys": InspectorJSON.array(info.ephemeralKeys.map(InspectorJSON.string)),
                "ephemeralKeyCount": InspectorJSON.number(info.ephemeralKeyCount),
                "writes": InspectorJSON.array(writes),
                "writesCount": InspectorJSON.number(written.count),
                "scannedAfter": InspectorJSON.number(start),
                "revision": InspectorJSON.number(status.revision),
            ]))
    }

    private func compactedAway(_ revision: UInt64, compactedRevision: UInt64) -> Answer {
        .failure(
            410, "revision \(revision) was compacted away: the change log starts after revision \(compactedRevision)",
            compactedRevision: compactedRevision)
    }

    private func clients() async throws(SharedStateError) -> Answer {
        let clients = try await client.clients()
        feed.writers.note(clients)
        let rows = clients.map { clientRow($0) }
        let series = feed.series
        return .ok(
            InspectorJSON.object([
                "clients": InspectorJSON.array(rows),
                "series": InspectorJSON.object([
                    "intervalSeconds": InspectorJSON.number(1),
                    "writesPerSecond": InspectorJSON.array(series.map { InspectorJSON.number($0.writesPerSecond) }),
                    "eventsPerSecond": InspectorJSON.array(series.map { InspectorJSON.number($0.eventsPerSecond) }),
                ]),
            ]))
    }
}
