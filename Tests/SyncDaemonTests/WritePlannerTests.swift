import Foundation
import SharedStateWire
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

@Suite struct WritePlannerTests {
    private let existing = Entry(key: "a", value: Data("1".utf8), version: 3, createRevision: 2, modRevision: 9)
    private func lookup(_ key: String) -> Entry? { key == "a" ? existing : nil }

    @Test func putCreatesVersionOneAtTheRevision() throws {
        let plan = try WritePlanner.plan(.put(key: "b", value: Data("2".utf8), ifVersion: nil), revision: 10, entry: lookup)
        #expect(plan.outcome == .put(revision: 10, version: 1))
        #expect(plan.changes == [.put(Entry(key: "b", value: Data("2".utf8), version: 1, createRevision: 10, modRevision: 10))])
    }

    @Test func putOverwritesKeepingTheCreateRevision() throws {
        let plan = try WritePlanner.plan(.put(key: "a", value: Data("5".utf8), ifVersion: 3), revision: 10, entry: lookup)
        #expect(plan.changes.first?.entry == Entry(key: "a", value: Data("5".utf8), version: 4, createRevision: 2, modRevision: 10))
    }

    @Test(arguments: [
        ("a", UInt64(2), "expected to be at version 2, but it is at version 3"),
        ("a", UInt64(0), "expected not to exist, but it is at version 3"),
        ("b", UInt64(1), "expected to be at version 1, but it does not exist"),
    ])
    func compareAndSetConflictsNameBothVersions(_ key: String, _ ifVersion: UInt64, _ message: String) {
        #expect {
            try WritePlanner.plan(.put(key: key, value: Data("0".utf8), ifVersion: ifVersion), revision: 10, entry: lookup)
        } throws: { error in
            let error = error as! SharedStateError
            return error.code == .conflict && error.message.contains(message)
        }
    }

    @Test func ifVersionZeroCreatesOnlyMissingKeys() throws {
        let plan = try WritePlanner.plan(.put(key: "b", value: Data("0".utf8), ifVersion: 0), revision: 4, entry: lookup)
        #expect(plan.outcome == .put(revision: 4, version: 1))
    }

    @Test func deletingAMissingKeyIsNotFound() {
        #expect {
            try WritePlanner.plan(.delete(key: "missing", ifVersion: nil), revision: 10, entry: lookup)
        } throws: { error in
            (error as! SharedStateError).code == .notFound
        }
    }

    @Test func deleteProducesADeleteChange() throws {
        let plan = try WritePlanner.plan(.delete(key: "a", ifVersion: 3), revision: 10, entry: lookup)
        #expect(plan.outcome == .delete(revision: 10))
        #expect(plan.changes == [.delete("a", revision: 10)])
    }

    @Test func transactionAppliesTheSuccessBranchWhenComparesHold() throws {
        let plan = try WritePlanner.plan(
            .transaction(
                compares: [.init(key: "a", target: .version(3)), .init(key: "b", target: .version(0))],
                onSuccess: [.put(key: "b", value: Data("1".utf8), ifVersion: nil), .delete(key: "a", ifVersion: nil)],
                onFailure: [.put(key: "failed", value: Data("1".utf8), ifVersion: nil)]
            ),
            revision: 10,
            entry: lookup
        )
        #expect(plan.outcome == .transaction(succeeded: true, revision: 10))
        #expect(plan.changes.map(\.key) == ["b", "a"])
        #expect(plan.changes.allSatisfy { $0.revision == 10 })
    }

    @Test func transactionAppliesTheFailureBranchWhenACompareFails() throws {
        let plan = try WritePlanner.plan(
            .transaction(
                compares: [.init(key: "a", target: .value(Data("2".utf8)))],
                onSuccess: [.put(key: "b", value: Data("1".utf8), ifVersion: nil)],
                onFailure: [.put(key: "failed", value: Data("1".utf8), ifVersion: nil)]
            ),
            revision: 10,
            entry: lookup
        )
        #expect(plan.outcome == .transaction(succeeded: false, revision: 10))
        #expect(plan.changes.map(\.key) == ["failed"])
    }

    @Test func transactionThatWritesNothingUsesNoRevision() throws {
        let plan = try WritePlanner.plan(
            .transaction(compares: [.init(key: "a", target: .version(1))], onSuccess: [], onFailure: []),
            revision: 10,
            entry: lookup
        )
        #expect(plan.outcome == .transaction(succeeded: false, revision: 9))
        #expect(plan.changes.isEmpty)
    }

    @Test func expiryDeletesOnlyKeysStillBoundToTheSession() throws {
        let keys: [String: Entry] = [
            "mine": Entry(key: "mine", value: Data("1".utf8), version: 1, createRevision: 1, modRevision: 1, ephemeralSession: 5),
            "theirs": Entry(key: "theirs", value: Data("1".utf8), version: 1, createRevision: 1, modRevision: 1, ephemeralSession: 6),
            "plain": Entry(key: "plain", value: Data("1".utf8), version: 1, createRevision: 1, modRevision: 1),
        ]
        let plan = try WritePlanner.plan(
            .expireEphemeral(session: 5, keys: ["mine", "theirs", "plain", "gone"]),
            revision: 2,
            entry: { keys[$0] }
        )
        #expect(plan.changes == [.delete("mine", revision: 2)])
        let everyone = try WritePlanner.plan(
            .expireEphemeral(session: nil, keys: ["mine", "theirs", "plain"]),
            revision: 2,
            entry: { keys[$0] }
        )
        #expect(everyone.changes.map(\.key) == ["mine", "theirs"])
    }

    @Test func restoreWritesWhatDiffersAndDeletesWhatTheBackupLacks() throws {
        let backup = [
            Entry(key: "a", value: Data("1".utf8), version: 9, createRevision: 1, modRevision: 9),
            Entry(key: "new", value: Data("2".utf8), version: 1, createRevision: 4, modRevision: 4),
            Entry(key: "gone-session", value: Data("3".utf8), version: 1, createRevision: 5, modRevision: 5, ephemeralSession: 2),
        ]
        let current: [String: Entry] = [
            "a": existing,
            "stale": Entry(key: "stale", value: Data("0".utf8), version: 1, createRevision: 1, modRevision: 1),
        ]
        let plan = try WritePlanner.plan(.restore(entries: backup, currentKeys: ["a", "stale"]), revision: 10) { current[$0] }
        // "a" already holds the backup's value; the ephemeral key's session is gone.
        #expect(plan.outcome == .restored(revision: 10, puts: 1, deletes: 1))
        #expect(
            plan.changes == [
                .put(Entry(key: "new", value: Data("2".utf8), version: 1, createRevision: 10, modRevision: 10)),
                .delete("stale", revision: 10),
            ])
    }

    @Test func restoreFindsWhatTheBackupLacksWhateverOrderItIsGivenIn() throws {
        func entry(_ key: String) -> Entry {
            Entry(key: key, value: Data("1".utf8), version: 1, createRevision: 1, modRevision: 1)
        }
        let keys = ["b", "a/z", "a/é", "c", "a"]
        let current = Dictionary(uniqueKeysWithValues: keys.map { ($0, entry($0)) })
        let plan = try WritePlanner.plan(.restore(entries: [entry("c"), entry("a/é")], currentKeys: keys), revision: 10) {
            current[$0]
        }
        #expect(plan.changes == ["a", "a/z", "b"].map { .delete($0, revision: 10) })
        #expect(plan.outcome == .restored(revision: 10, puts: 0, deletes: 3))
    }

    @Test func transactionWritingAKeyTwiceIsRefused() {
        #expect {
            try WritePlanner.plan(
                .transaction(
                    compares: [],
                    onSuccess: [.put(key: "b", value: Data("1".utf8), ifVersion: nil), .delete(key: "b", ifVersion: nil)],
                    onFailure: []
                ),
                revision: 10,
                entry: lookup
            )
        } throws: { error in
            (error as! SharedStateError).code == .invalidArgument
        }
    }

    @Test func failedOperationCompareFailsTheWholeTransaction() {
        #expect {
            try WritePlanner.plan(
                .transaction(
                    compares: [],
                    onSuccess: [
                        .put(key: "b", value: Data("1".utf8), ifVersion: nil), .put(key: "a", value: Data("1".utf8), ifVersion: 1),
                    ],
                    onFailure: []
                ),
                revision: 10,
                entry: lookup
            )
        } throws: { error in
            (error as! SharedStateError).code == .conflict
        }
    }
}
