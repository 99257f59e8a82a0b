import Foundation
import SharedStateWire
import TestSupport
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

/// A restore narrowed off the writer against the state at revision R (`StateEngine+Restore`)
/// commits exactly what the same restore planned wholly on the writer commits, whatever is written
/// between R and its commit: random states, backups and writes, ephemeral keys among them, each
/// run through two real engines side by side.
@Suite struct StateEngineRestoreTests {
    private struct Scenario {
        var initial: [(key: String, value: String, isEphemeral: Bool)]
        var backup: [Entry]
        var writes: [(key: String, value: String?, isEphemeral: Bool)]
    }

    private static func scenario(_ generator: inout SeededGenerator) -> Scenario {
        let keys = (0..<24).map { "k/\($0)" }
        func value() -> String { "\(Int.random(in: 0..<3, using: &generator))" }
        func isEphemeral() -> Bool { Int.random(in: 0..<5, using: &generator) == 0 }
        return Scenario(
            initial: keys.filter { _ in Bool.random(using: &generator) }.map { ($0, value(), isEphemeral()) },
            backup: keys.filter { _ in Bool.random(using: &generator) }.map {
                Entry(
                    key: $0, value: Data(value().utf8), version: 1, createRevision: 1, modRevision: 1,
                    ephemeralSession: isEphemeral() ? 3 : 0)
            },
            writes: (0..<Int.random(in: 0...10, using: &generator)).map { _ in
                (keys.randomElement(using: &generator)!, Bool.random(using: &generator) ? value() : nil, isEphemeral())
            }
        )
    }

    private static func write(_ key: String, _ value: String?, isEphemeral: Bool, to engine: StateEngine) async {
        if let value {
            _ = await engine.write(.put(key: key, value: Data(value.utf8), ifVersion: nil, ephemeralSession: isEphemeral ? 9 : 0))
        } else {
            _ = await engine.write(.delete(key: key, ifVersion: nil))
        }
    }

    private static func state(of engine: StateEngine) -> [String] {
        engine.listed(prefix: "").entries.map {
            "\($0.key)=\(String(decoding: $0.value, as: UTF8.self)) v\($0.version) c\($0.createRevision) m\($0.modRevision) e\($0.ephemeralSession)"
        }
    }

    @Test(arguments: [UInt64(41), 42, 43, 44, 45, 46])
    func commitsWhatTheWholePlanCommitsWhateverIsWrittenMeanwhile(seed: UInt64) async throws {
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<8 {
            let scenario = Self.scenario(&generator)
            try await withEngine { narrowed in
                try await withEngine { whole in
                    for engine in [narrowed, whole] {
                        for (key, value, isEphemeral) in scenario.initial {
                            await Self.write(key, value, isEphemeral: isEphemeral, to: engine)
                        }
                    }
                    // Narrowed at R as StateEngine.restore does it, with the journal open...
                    let (order, revision) = narrowed.published.withLock { state in
                        state.restoreJournal = RestoreJournal()
                        state.restoreJournal!.restores = 1
                        return (state.entries.order, state.revision)
                    }
                    let sorted = RestoreCandidates.inByteOrder(scenario.backup)
                    let candidates = RestoreCandidates.find(in: sorted, against: order, written: [])
                    // ...then written to, as the other engine is, before the writer gets the restore.
                    for engine in [narrowed, whole] {
                        for (key, value, isEphemeral) in scenario.writes {
                            await Self.write(key, value, isEphemeral: isEphemeral, to: engine)
                        }
                    }
                    let narrowedOutcome = await narrowed.write(
                        .restore(
                            entries: candidates.entries, currentKeys: candidates.currentKeys,
                            basis: RestoreBasis(revision: revision, backup: sorted)))
                    let wholeOutcome = await whole.write(.restore(entries: scenario.backup))
                    #expect((try? narrowedOutcome.get()) == (try? wholeOutcome.get()))
                    #expect(Self.state(of: narrowed) == Self.state(of: whole), "backup \(scenario.backup.map(\.key))")
                    let backupKeys = scenario.backup.filter { $0.ephemeralSession == 0 }.map(\.key).sorted(by: KeyByteOrder.precedes)
                    #expect(narrowed.listed(prefix: "").entries.map(\.key) == backupKeys)
                }
            }
        }
    }

    @Test func restoresAtOnceWithWritesBetweenEndAtOneOfTheBackupsAndLeaveNoJournal() async throws {
        func backup(_ value: String) -> [Entry] {
            (0..<200).map { Entry(key: "k/\($0)", value: Data(value.utf8), version: 1, createRevision: 1, modRevision: 1) }
        }
        try await withEngine { engine in
            for index in 0..<300 { _ = await engine.put("k/\(index)", "0") }
            async let first = engine.restore(backup("1"))
            async let second = engine.restore(backup("2"))
            // Writes to keys the backups lack, while both are narrowed and committed.
            for index in 0..<50 { _ = await engine.put("k/\(200 + index * 2)", "9") }
            let outcomes = await [first, second]
            #expect(outcomes.allSatisfy { (try? $0.get()) != nil })
            let entries = engine.listed(prefix: "").entries
            let restored = entries.filter { Int($0.key.dropFirst(2))! < 200 }
            // The last restore to commit wins whole; a write after it is all that may remain of
            // the keys the backups lack.
            let values = Set(restored.map { String(decoding: $0.value, as: UTF8.self) })
            #expect(restored.count == 200)
            #expect(values == ["1"] || values == ["2"])
            #expect(entries.filter { Int($0.key.dropFirst(2))! >= 200 }.allSatisfy { $0.value == Data("9".utf8) })
            #expect(engine.published.withLock { $0.restoreJournal == nil })
        }
    }
}
