import Foundation
import SharedStateWire
import TestSupport
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

/// Planning a restore from its candidates makes the same changes as planning it from the whole
/// backup and every current key: random states, backups and writes planned before it.
@Suite struct RestoreCandidatesTests {
    @Test(arguments: [UInt64(31), 32, 33, 34, 35])
    func candidatesPlanTheSameChangesAsEverything(seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        // Keys are in Unicode's composed form (syncd refuses others), so no two spell one key.
        let pieces = WatchIndexTests.pieces.filter { $0 != "e\u{301}" }
        func randomKey() -> String {
            (0..<Int.random(in: 1...3, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
        }
        func randomEntry(_ key: String) -> Entry {
            Entry(
                key: key,
                value: Data("\(Int.random(in: 0..<3, using: &generator))".utf8),
                version: 1,
                createRevision: 1,
                modRevision: 1,
                ephemeralSession: Int.random(in: 0..<6, using: &generator) == 0 ? 7 : 0
            )
        }

        for _ in 0..<40 {
            var table = EntryTable()
            var state: [String: Entry] = [:]
            for key in (0..<Int.random(in: 0..<200, using: &generator)).map({ _ in randomKey() }) {
                let entry = randomEntry(key)
                state[key] = entry
                table.set(key, to: StoredEntry.make(entry))
            }
            // The backup shares some of the state's keys, some with the same values.
            var backup: [String: Entry] = [:]
            for (key, entry) in state where Bool.random(using: &generator) {
                backup[key] = Bool.random(using: &generator) ? entry : randomEntry(key)
            }
            for key in (0..<Int.random(in: 0..<100, using: &generator)).map({ _ in randomKey() }) {
                backup[key] = randomEntry(key)
            }
            // Writes planned before the restore in its batch: puts and deletions.
            var overlay: [String: Entry?] = [:]
            for _ in 0..<Int.random(in: 0..<4, using: &generator) {
                let key = Bool.random(using: &generator) ? (state.keys.randomElement(using: &generator) ?? randomKey()) : randomKey()
                overlay[key] = Bool.random(using: &generator) ? randomEntry(key) : Entry?.none
            }
            func current(_ key: String) -> Entry? {
                if let written = overlay[key] { return written }
                return state[key]
            }
            let shuffledBackup = backup.values.shuffled(using: &generator)
            let currentKeys = Set(state.keys).union(overlay.compactMap { $0.value == nil ? nil : $0.key })

            let everything = try WritePlanner.plan(
                .restore(entries: shuffledBackup, currentKeys: Array(currentKeys)), revision: 9, entry: current)
            let candidates = RestoreCandidates.find(in: shuffledBackup, against: table.order, written: Set(overlay.keys))
            let narrowed = try WritePlanner.plan(
                .restore(entries: candidates.entries, currentKeys: candidates.currentKeys), revision: 9, entry: current)
            #expect(narrowed.changes == everything.changes, "seed \(seed)")
            #expect(narrowed.outcome == everything.outcome)
            #expect(candidates.entries.count <= backup.count)
        }
    }

    @Test func anEntryTheStateHoldsAlreadyIsNoCandidate() {
        func entry(_ key: String, _ value: String, session: UInt64 = 0) -> Entry {
            Entry(key: key, value: Data(value.utf8), version: 1, createRevision: 1, modRevision: 1, ephemeralSession: session)
        }
        var table = EntryTable()
        for stored in [entry("a", "1"), entry("b", "1"), entry("c", "1"), entry("e", "1", session: 4)] {
            table.set(stored.key, to: StoredEntry.make(stored))
        }
        let backup = [entry("a", "1"), entry("b", "2"), entry("d", "1"), entry("e", "1")]
        let quiet = RestoreCandidates.find(in: backup, against: table.order, written: [])
        #expect(quiet.entries.map(\.key) == ["b", "d", "e"])
        #expect(quiet.currentKeys == ["c"])
        // A key written earlier in the batch is looked at whatever the table holds.
        let written = RestoreCandidates.find(in: backup, against: table.order, written: ["a"])
        #expect(written.entries.map(\.key) == ["a", "b", "d", "e"])
        #expect(written.currentKeys == ["c", "a"])
    }
}
