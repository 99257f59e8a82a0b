import Foundation

/// Decides what one write request does to the state, without doing any I/O: checks its compares
/// against the current entries and computes the changes it makes at a given revision.
///
/// The engine calls it for every request of a group commit, in order, with a lookup that sees the
/// changes of the requests planned before it.
package enum WritePlanner {
    /// The result of planning one request.
    package struct Plan: Sendable, Equatable {
        package var outcome: WriteOutcome
        /// The changes to commit; empty when the request changes nothing (no revision is used).
        package var changes: [Change]

        package init(outcome: WriteOutcome, changes: [Change]) {
            self.outcome = outcome
            self.changes = changes
        }
    }

    /// Plans `request` as the write that gets `revision` if it changes anything.
    ///
    /// - Parameters:
    ///   - request: The write.
    ///   - revision: The revision its changes get.
    ///   - entry: The current entry of a key, or nil if it does not exist. Only a transaction
    ///     (its value compares) and a restore read the entry's value; for a put, a delete or an
    ///     expiry it may be left empty.
    /// - Throws: ``SharedStateError`` `conflict` when a compare fails, `notFound` when deleting a
    ///   missing key, `invalidArgument` when a transaction names one key twice.
    package static func plan(
        _ request: WriteRequest,
        revision: UInt64,
        entry: (String) -> Entry?
    ) throws(SharedStateError) -> Plan {
        switch request {
        case .put(let key, let value, let ifVersion, let ephemeralSession):
            let operation = WriteRequest.WriteOperation.put(
                key: key, value: value, ifVersion: ifVersion, ephemeralSession: ephemeralSession)
            guard let change = try apply(operation, revision: revision, entry: entry) else {
                preconditionFailure("a put always changes its key")
            }
            return Plan(outcome: .put(revision: revision, version: change.entry.version), changes: [change])

        case .delete(let key, let ifVersion):
            guard let change = try apply(.delete(key: key, ifVersion: ifVersion), revision: revision, entry: entry) else {
                throw RequestRules.notFound(key)
            }
            return Plan(outcome: .delete(revision: revision), changes: [change])

        case .transaction(let compares, let onSuccess, let onFailure):
            try checkBranches(onSuccess, onFailure)
            let succeeded = compares.allSatisfy { holds($0, current: entry($0.key)) }
            let operations = succeeded ? onSuccess : onFailure
            // Deleting a missing key inside a transaction is a no-op, so a transaction can say
            // "make sure this key is gone".
            var changes: [Change] = []
            for operation in operations {
                if let change = try apply(operation, revision: revision, entry: entry) { changes.append(change) }
            }
            return Plan(
                outcome: .transaction(succeeded: succeeded, revision: changes.isEmpty ? revision - 1 : revision),
                changes: changes
            )

        case .restore(let entries, let currentKeys, _):
            let backup = inByteOrder(entries, by: \.key)
            var changes: [Change] = []
            // Ephemeral keys of the backup belonged to sessions that are gone.
            for restored in backup where restored.ephemeralSession == 0 {
                let current = entry(restored.key)
                if current?.value == restored.value && current?.ephemeralSession == 0 { continue }
                changes.append(
                    .put(
                        Entry(
                            key: restored.key,
                            value: restored.value,
                            version: (current?.version ?? 0) + 1,
                            createRevision: current?.createRevision ?? revision,
                            modRevision: revision
                        )
                    )
                )
            }
            let puts = changes.count
            // The keys of now that the backup lacks: one walk of both, in byte order.
            var next = backup.startIndex
            for key in inByteOrder(currentKeys, by: \.self) {
                while next < backup.endIndex && KeyByteOrder.precedes(backup[next].key, key) { next += 1 }
                if next < backup.endIndex && backup[next].key == key && backup[next].ephemeralSession == 0 { continue }
                if entry(key) != nil { changes.append(.delete(key, revision: revision)) }
            }
            return Plan(
                outcome: .restored(revision: changes.isEmpty ? revision - 1 : revision, puts: puts, deletes: changes.count - puts),
                changes: changes
            )

        case .expireEphemeral(let session, let keys):
            let changes = keys.compactMap { key -> Change? in
                guard let current = entry(key), current.ephemeralSession != 0 else { return nil }
                if let session, current.ephemeralSession != session { return nil }
                return .delete(key, revision: revision)
            }
            return Plan(outcome: .expired(revision: changes.isEmpty ? revision - 1 : revision), changes: changes)
        }
    }

    /// `elements` sorted by the bytes of their keys; as they are when they already are (syncd's
    /// reads return them so).
    private static func inByteOrder<Element>(_ elements: [Element], by key: (Element) -> String) -> [Element] {
        let isSorted = zip(elements, elements.dropFirst()).allSatisfy { !KeyByteOrder.precedes(key($1), key($0)) }
        return isSorted ? elements : elements.sorted { KeyByteOrder.precedes(key($0), key($1)) }
    }

    /// What a put makes of its key's numbers: the version after `current`'s (1 for a new key), and
    /// the create revision it keeps (`revision` for a new key).
    package struct PutNumbers: Sendable, Equatable {
        package var version: UInt64
        package var createRevision: UInt64
    }

    /// The one rule of a put, which syncd's own planner (the engine's, which writes the entry
    /// straight into its table) and ``plan(_:revision:entry:)`` both follow: checks `ifVersion`
    /// against `current` (the key's version and create revision; nil: the key does not exist),
    /// and gives the numbers the put at `revision` makes.
    ///
    /// - Throws: ``SharedStateError`` `conflict` when `ifVersion` is given and differs.
    package static func put(
        _ key: String, current: (version: UInt64, createRevision: UInt64)?, ifVersion: UInt64?, revision: UInt64
    ) throws(SharedStateError) -> PutNumbers {
        let version = current?.version ?? 0
        if let ifVersion, ifVersion != version { throw versionConflict(key: key, expected: ifVersion, actual: version) }
        return PutNumbers(version: version + 1, createRevision: current?.createRevision ?? revision)
    }

    /// The change one operation makes, after checking its `ifVersion`; nil for the deletion of a
    /// key that does not exist.
    private static func apply(
        _ operation: WriteRequest.WriteOperation,
        revision: UInt64,
        entry: (String) -> Entry?
    ) throws(SharedStateError) -> Change? {
        let current = entry(operation.key)
        switch operation {
        case .put(let key, let value, let ifVersion, let ephemeralSession):
            let numbers = try put(key, current: current.map { ($0.version, $0.createRevision) }, ifVersion: ifVersion, revision: revision)
            return .put(
                Entry(
                    key: key,
                    value: value,
                    version: numbers.version,
                    createRevision: numbers.createRevision,
                    modRevision: revision,
                    ephemeralSession: ephemeralSession
                )
            )
        case .delete(let key, let ifVersion):
            try check(key: key, current: current, ifVersion: ifVersion)
            return current == nil ? nil : .delete(key, revision: revision)
        }
    }

    private static func check(key: String, current: Entry?, ifVersion: UInt64?) throws(SharedStateError) {
        guard let ifVersion else { return }
        let version = current?.version ?? 0
        guard version == ifVersion else {
            throw versionConflict(key: key, expected: ifVersion, actual: version)
        }
    }

    /// Refuses a transaction that writes one key twice in a branch. Both branches are checked,
    /// so a malformed transaction fails whatever the state.
    package static func checkBranches(
        _ onSuccess: [WriteRequest.WriteOperation], _ onFailure: [WriteRequest.WriteOperation]
    ) throws(SharedStateError) {
        for branch in [onSuccess, onFailure] {
            var seen = Set<String>()
            for operation in branch where !seen.insert(operation.key).inserted {
                throw SharedStateError(
                    .invalidArgument, "transaction writes key \(KeyRules.quoted(operation.key)) more than once in one branch")
            }
        }
    }

    /// The `conflict` of a write that expected `key` at version `expected` (0: not to exist) and
    /// found it at `actual`.
    package static func versionConflict(key: String, expected: UInt64, actual: UInt64) -> SharedStateError {
        let expectation = expected == 0 ? "not to exist" : "to be at version \(expected)"
        let found = actual == 0 ? "it does not exist" : "it is at version \(actual)"
        return SharedStateError(.conflict, "key \(KeyRules.quoted(key)) was expected \(expectation), but \(found)")
    }

    private static func holds(_ compare: WriteRequest.Compare, current: Entry?) -> Bool {
        switch compare.target {
        case .version(let version): (current?.version ?? 0) == version
        case .value(let value): current?.value == value
        }
    }
}
