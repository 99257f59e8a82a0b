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
}
