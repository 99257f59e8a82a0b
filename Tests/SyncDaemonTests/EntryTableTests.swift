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
