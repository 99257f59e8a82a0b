import Foundation
import SharedStateWire

/// Planning a group of writes against the published entries, for a backend that decides
/// revisions itself (a ``RevisionStore``).
package extension StateEngine {
    /// What ``plan(_:)`` decided.
    struct Plan {
        /// Each request's result, at its index.
        var results: [Result<WriteOutcome, SharedStateError>] = []
        /// The revisions the requests that change something make, in order.
        var revisions: [CommittedRevision] = []
        /// Each key those revisions change, with its entry after them (nil: deleted), in the
        /// form the engine stores it: made here, off the engine's lock, and once.
        var entries = GroupEntries()
        /// The revisions' records, encoded together and framed as the store keeps a group (see
        /// ``LogRecordEncoding/group(of:framedAs:)``): each revision's record is a slice of it.
        var group = Data()
    }

    /// Plans each write in order against the published state as the earlier ones of `batch`
    /// leave it; each write that changes something gets the next revision, made by its origin.
    /// Their records are framed as `framing` says (the store's ``RevisionStore/recordFraming``).
    ///
    /// Only the writer calls it, one group at a time: nothing else publishes meanwhile.
    func plan(_ batch: [PendingWrite], framing: LogRecord.Framing) -> Plan {
        var plan = Plan()
        // Keys written by earlier requests of this batch: nil means deleted.
        var overlay = GroupEntries(capacity: batch.count)
        // The key last looked up, with its hash: the key a put or a delete then writes.
        var lastLookedUp: (key: String, hash: Int)?
        // The schemas as the writes planned so far leave them.
        var (revision, schemas) = published.withLock { ($0.revision, $0.schemas) }
        plan.results.reserveCapacity(batch.count)
        // A lone write's revision needs no array.
        var first: LogRecordEncoding.Revision?
        var revisions: [LogRecordEncoding.Revision] = []
        func record(_ made: LogRecordEncoding.Revision) {
            if first == nil {
                first = made
            } else {
                if revisions.isEmpty {
                    revisions.reserveCapacity(batch.count)
                    revisions.append(first!)
                }
                revisions.append(made)
            }
        }

        // By index: a write copied whole would retain its reply's target too.
        for index in batch.indices {
            var request = batch[index].request
            let origin = batch[index].origin
            if case .expireEphemeral(let session?, _) = request {
                var keys = published.withLock { $0.ephemeralKeys[session] ?? [] }
                for written in overlay.written where written.entry?.ephemeralSession == session { keys.insert(written.key) }
                request = .expireEphemeral(session: session, keys: keys.sorted())
            }
            if case .restore(let entries, let currentKeys, let basis) = request {
                // A restore makes the state as the backup has it: after the writes planned
                // before it in this batch too.
                let candidates: (entries: [Entry], currentKeys: [String])
                if let basis {
                    // Narrowed off the writer at basis.revision: only the keys written since
                    // need another look.
                    let written = keysWritten(after: basis.revision) + overlay.written.map(\.key)
                    candidates = RestoreCandidates.adding(written, to: entries, currentKeys: currentKeys, basis: basis)
                } else {
                    let order = published.withLock { $0.entries.order }
                    candidates = RestoreCandidates.find(in: entries, against: order, written: Set(overlay.written.map(\.key)))
                }
                request = .restore(entries: candidates.entries, currentKeys: candidates.currentKeys)
            }
            // A put, a delete or an expiry reads the numbers of the current entry, never its value.
            let readsValues: Bool
            switch request {
            case .put, .delete, .expireEphemeral: readsValues = false
            case .transaction, .restore: readsValues = true
            }
            do {
                if case .put(let key, let value, let ifVersion, let ephemeralSession) = request {
                    var schemasAfter: PrefixSchemas?
                    // Without schemas, a put's check is this test.
                    if !schemas.isEmpty || SchemaKeys.isReserved(key) {
                        schemasAfter = try schemas.check(request) { prefix in values(under: prefix, overlay: overlay) }
                    }
                    let (entry, version) = try plannedPut(
                        key, value, ifVersion: ifVersion, ephemeralSession: ephemeralSession, revision: revision + 1, overlay: &overlay)
                    if let schemasAfter { schemas = schemasAfter }
                    revision += 1
                    record(LogRecordEncoding.Revision(revision: revision, changes: RevisionChanges(put: key, entry: entry), origin: origin))
                    plan.results.append(.success(.put(revision: revision, version: version)))
                    continue
                }
                _ = try schemas.check(request) { prefix in values(under: prefix, overlay: overlay) }
                let planned = try WritePlanner.plan(request, revision: revision + 1) { key in
                    var bytes = key
                    let stored = bytes.withUTF8 { bytes in
                        let hash = KeyIndex.hash(of: bytes)
                        lastLookedUp = (key, hash)
                        return overlay.entry(bytes, hash: hash) ?? published.withLock { $0.entries.entry(bytes, hash: hash) }
                    }
                    return stored?.entry(key: key, withValue: readsValues)
                }
                if !planned.changes.isEmpty {
                    revision += 1
                    for change in planned.changes {
                        // Compared as bytes, as the hash was made: `==` of `String`s is canonical equivalence.
                        let known = lastLookedUp.flatMap { KeyIndex.sameBytes($0.key, change.key) ? $0.hash : nil }
                        let hash = known ?? KeyIndex.hash(of: change.key)
                        overlay.set(change.key, hash: hash, to: change.type == .put ? StoredEntry.make(change.entry) : nil)
                        if SchemaKeys.isReserved(change.key) {
                            schemas.follow(change.key, value: change.type == .put ? change.entry.value : nil)
                        }
                    }
                    record(LogRecordEncoding.Revision(revision: revision, changes: RevisionChanges(planned.changes), origin: origin))
                }
                plan.results.append(.success(planned.outcome))
            } catch {
                metrics.countRefusal(error)
                plan.results.append(.failure(error))
            }
        }
        plan.entries = overlay
        guard let first else { return plan }
        if revisions.isEmpty {
            let revision = CommittedRevision(revision: first.revision, changes: first.changes, origin: first.origin)
            plan.revisions = [revision]
            plan.group = revision.logRecord
            return plan
        }
        // Encoded together once all are planned: one buffer for the group, each record a slice.
        let (group, records) = LogRecordEncoding.group(of: revisions, framedAs: framing)
        plan.revisions.reserveCapacity(revisions.count)
        for (revision, record) in zip(revisions, records) {
            plan.revisions.append(
                CommittedRevision(
                    revision: revision.revision, changes: revision.changes, origin: revision.origin, logRecord: group[record]))
        }
        plan.group = group
        return plan
    }

    /// The values under `prefix` as the writes planned so far (`overlay`; none by default) leave
    /// them, in byte order of their keys: what a schema set or removed there is checked against.
    func values(under prefix: String, overlay: GroupEntries = GroupEntries()) -> [(key: String, value: Data)] {
        let order = published.withLock { $0.entries.order }
        var found: [(key: String, value: Data)] = []
        var planned = Set<String>()
        for written in overlay.written where KeyRules.key(written.key, hasPrefix: prefix) {
            planned.insert(written.key)
            if let entry = written.entry { found.append((written.key, entry.entry(key: written.key).value)) }
        }
        for stored in EntryTable.entries(in: order, withPrefix: prefix) {
            let entry = stored.entry()
            if !planned.contains(entry.key) { found.append((entry.key, entry.value)) }
        }
        return planned.isEmpty ? found : found.sorted { KeyByteOrder.precedes($0.key, $1.key) }
    }

    /// Plans a put as the write that gets `revision`, by ``WritePlanner``'s rule of a put
    /// (``WritePlanner/put(_:current:ifVersion:revision:)``, the one the in-memory double runs
    /// too), without the `Entry`, the ``Change`` and the array of changes ``WritePlanner/plan(_:revision:entry:)``
    /// makes: the entry is made at once, in a cell of the published table's
    /// (``EntryTable/makeCell(byteCount:)``), taken under the same lock as the current entry's
    /// numbers are read, so that publishing stores it as it is. Returns the entry and its version;
    /// records it in `overlay`.
    private func plannedPut(
        _ key: String, _ value: Data, ifVersion: UInt64?, ephemeralSession: UInt64, revision: UInt64, overlay: inout GroupEntries
    ) throws(SharedStateError) -> (StoredEntry, UInt64) {
        var key = key
        let keyCount = key.utf8.count
        let (hash, inGroup) = key.withUTF8 { bytes in
            let hash = KeyIndex.hash(of: bytes)
            return (hash, overlay.entry(bytes, hash: hash))
        }
        let planned = published.withLock { [key] state -> Result<(EntryCell, StoredEntry.Numbers), SharedStateError> in
            let current = (inGroup ?? state.entries.entry(key, hash: hash))?.numbers
            let put: WritePlanner.PutNumbers
            do throws(SharedStateError) {
                put = try WritePlanner.put(
                    key, current: current.map { ($0.version, $0.createRevision) }, ifVersion: ifVersion, revision: revision)
            } catch {
                return .failure(error)
            }
            let numbers = StoredEntry.Numbers(
                version: put.version, createRevision: put.createRevision, modRevision: revision, ephemeralSession: ephemeralSession)
            let cell = state.entries.makeCell(byteCount: EntryBytes.count(key: keyCount, value: value.count, numbers: numbers))
            return .success((cell, numbers))
        }
        let (cell, numbers) = try planned.get()
        // Written outside the lock: no one sees the cell before the group is published.
        let entry = key.withUTF8 { key in
            value.withUnsafeBytes { value in cell.write(key: key, value: value.assumingMemoryBound(to: UInt8.self), numbers: numbers) }
        }
        overlay.set(key, hash: hash, to: entry)
        return (entry, numbers.version)
    }
}
