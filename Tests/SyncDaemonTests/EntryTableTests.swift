import Foundation
import SharedStateWire
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

@Suite struct EntryTableTests {
    private func entry(_ key: String, _ value: String, version: UInt64 = 1) -> Entry {
        Entry(key: key, value: Data(value.utf8), version: version, createRevision: 1, modRevision: version, ephemeralSession: version % 2)
    }

    @Test func findsReplacesAndRemovesByKey() {
        var table = EntryTable()
        let long = "devices/kitchen/thermostat/setpoint"  // longer than a small string
        for key in ["a", "a/b", "ab", long, "ünïcode/ключ"] {
            table.insert(.make(entry(key, #"{"k":"\#(key)"}"#)))
        }
        #expect(table.count == 5)
        #expect(table[long]?.entry() == entry(long, #"{"k":"\#(long)"}"#))
        #expect(table["ünïcode/ключ"]?.key == "ünïcode/ключ")
        #expect(table["a/"] == nil)

        table.set("a", to: .make(entry("a", "2", version: 2)))
        #expect(table.count == 5)
        #expect(table["a"]?.entry(key: "a") == entry("a", "2", version: 2))
        #expect(table["a"]?.ephemeralSession == 0)

        table.set("ab", to: nil)
        table.set("missing", to: nil)
        #expect(table.count == 4)
        #expect(table["ab"] == nil)
        #expect(Set(table.all.map(\.key)) == ["a", "a/b", long, "ünïcode/ключ"])
    }

    @Test func aTableThatTracksChangesReportsEachKeyPutOnceAndTheKeysDeleted() {
        var table = EntryTable()
        // Loaded entries are not changes, nor is anything set while the table does not track.
        for number in 0..<20 { table.insert(.make(entry("loaded/\(number)", "\(number)"))) }
        table.set("untracked", to: .make(entry("untracked", "1")))
        #expect(table.changes.entries.isEmpty && table.changes.deletedKeys.isEmpty)

        table.tracksChanges = true
        // Enough new keys to grow the index twice: the marks move with their entries.
        for round in 1...3 {
            for number in 0..<40 { table.set("new/\(number)", to: .make(entry("new/\(number)", "\(round)", version: UInt64(round)))) }
        }
        table.set("loaded/3", to: .make(entry("loaded/3", "changed", version: 2)))
        // Removing keys moves later entries of their runs back: their marks go with them.
        for number in stride(from: 0, to: 40, by: 3) { table.set("new/\(number)", to: nil) }
        table.set("loaded/4", to: nil)
        table.set("new/0", to: .make(entry("new/0", "again", version: 1)))

        let changes = table.changes
        let put = Dictionary(uniqueKeysWithValues: changes.entries.map { ($0.key, $0.entry()) })
        var expected = ["loaded/3": entry("loaded/3", "changed", version: 2), "new/0": entry("new/0", "again", version: 1)]
        for number in 0..<40 where number % 3 != 0 { expected["new/\(number)"] = entry("new/\(number)", "3", version: 3) }
        #expect(put == expected)
        #expect(changes.deletedKeys == stride(from: 0, to: 40, by: 3).map { "new/\($0)" } + ["loaded/4"])
        #expect(table["loaded/3"]?.entry(key: "loaded/3") == expected["loaded/3"])

        table.forgetChanges()
        #expect(table.changes.entries.isEmpty && table.changes.deletedKeys.isEmpty)
        table.set("new/1", to: .make(entry("new/1", "4", version: 4)))
        #expect(table.changes.entries.map(\.key) == ["new/1"])
        // Every entry is still found after all that.
        #expect(table.count == 20 - 1 + 1 + 40 - 14 + 1)
        for key in put.keys { #expect(table[key] != nil) }
    }

    @Test func anEmptyValueAndAnEmptyTableAreFine() {
        var table = EntryTable(capacity: 10)
        #expect(table["x"] == nil)
        table.insert(.make(entry("x", "")))
        #expect(table["x"]?.entry().value == Data())
    }

    /// Random puts and deletes over a few hundred keys, checked against a dictionary after each
    /// step: the index grows from its smallest size, and removals move entries back along their
    /// probe runs; a key lost or duplicated there shows as a wrong lookup or count.
    @Test func agreesWithADictionaryThroughRandomPutsAndDeletes() {
        var generator = SystemRandomNumberGenerator()
        var table = EntryTable()
        var model: [String: Entry] = [:]
        for step in 1...20_000 {
            let key = "k/\(Int.random(in: 0..<300, using: &generator))"
            if Bool.random(using: &generator) || step < 200 {
                let new = entry(key, "\(step)", version: UInt64(step))
                table.set(key, to: .make(new))
                model[key] = new
            } else {
                let removed = table.set(key, to: nil)
                #expect(removed?.entry(key: key) == model.removeValue(forKey: key))
            }
            let probe = "k/\(Int.random(in: 0..<300, using: &generator))"
            #expect(table[probe]?.entry(key: probe) == model[probe])
            #expect(table.count == model.count)
        }
        for (key, expected) in model { #expect(table[key]?.entry(key: key) == expected) }
        #expect(Set(table.all.map(\.key)) == Set(model.keys))
        #expect(table.entries(withPrefix: "").map(\.key) == model.keys.sorted())
    }
}
