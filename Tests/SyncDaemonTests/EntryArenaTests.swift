import Foundation
import SharedStateWire
import Testing

@testable import SyncEngine

/// The table's entries live in cells of shared slabs (``EntryArena``): a cell is reused only
/// once nothing outside the table holds its slab, so an entry anyone holds, or a copy of the key
/// order, reads as it was however the table changes after.
@Suite struct EntryArenaTests {
    private func entry(_ key: String, _ value: String, version: UInt64) -> Entry {
        Entry(key: key, value: Data(value.utf8), version: version, createRevision: 1, modRevision: version, ephemeralSession: 0)
    }

    /// A value of `size` bytes that tells the step that wrote it.
    private func value(_ step: Int, size: Int) -> String {
        let mark = "\(step):"
        return mark + String(repeating: "v", count: max(0, size - mark.count))
    }

    @Test func everySizeHasACellThatFitsItWithLittleToSpare() {
        var lastIndex = -1
        for byteCount in 1...EntryArena.largestCellSize {
            let (index, cellSize) = try! #require(EntryArena.sizeClass(of: byteCount))
            #expect(cellSize >= byteCount)
            #expect(cellSize - byteCount <= max(3, byteCount / 16), "\(byteCount) bytes in a cell of \(cellSize)")
            #expect(index >= lastIndex && index <= lastIndex + 1, "classes are numbered in order, without gaps")
            lastIndex = index
        }
        #expect(EntryArena.sizeClass(of: EntryArena.largestCellSize + 1) == nil)
    }

    @Test func anEntryHeldReadsTheSameWhileItsKeyAndOthersAreOverwritten() {
        var table = EntryTable()
        for number in 0..<200 { table.set("k/\(number)", to: .make(entry("k/\(number)", value(0, size: 90), version: 1))) }
        let held = try! #require(table["k/7"])
        let before = held.entry()
        for step in 1...5_000 {
            let key = "k/\(step % 200)"
            table.set(key, to: .make(entry(key, value(step, size: 90), version: UInt64(step + 1))))
        }
        #expect(held.entry() == before)
        #expect(table["k/7"]?.entry() != before)
    }

    @Test func aCopyOfTheOrderReadsEveryEntryAsItWasWhenCopied() {
        var table = EntryTable()
        var model: [String: Entry] = [:]
        for number in 0..<300 {
            let key = "k/\(number)"
            model[key] = entry(key, value(0, size: 20 + number % 200), version: 1)
            table.set(key, to: .make(model[key]!))
        }
        let copy = table.order
        let copied = model
        for step in 1...6_000 {
            let key = "k/\(step * 7 % 300)"
            if step % 5 == 0 {
                table.set(key, to: nil)
            } else {
                table.set(key, to: .make(entry(key, value(step, size: 20 + step % 300), version: UInt64(step + 1))))
            }
        }
        let read = EntryTable.entries(in: copy, withPrefix: "").map { $0.entry() }
        #expect(read == copied.keys.sorted(by: KeyByteOrder.precedes).map { copied[$0]! })
    }

    @Test func cellsGivenBackAreReusedSoOverwritesTakeNoMoreSlabs() {
        var table = EntryTable()
        for step in 0..<50_000 {
            let key = "k/\(step % 500)"
            table.set(key, to: .make(entry(key, value(step, size: 100), version: UInt64(step + 1))))
        }
        // 500 entries in two size classes (the version's varint grows from 2 bytes to 3): a few
        // slabs each (4, 8, 16, 32 KB), not the 85 of 64 KB that 5.6 MB of entries written take.
        #expect(table.slabCount <= 8, "\(table.slabCount) slabs")
        for number in 0..<500 { table.set("k/\(number)", to: nil) }
        // Each class keeps one slab, for its next entry.
        #expect(table.slabCount <= 2)
    }

    /// While a reader holds every slab (a copy of the order, for a large list), no cell can be
    /// reused: every key overwritten takes a new cell, filling new slabs one after another, not
    /// a new slab for each of the held ones that has cells given back.
    @Test func whileReadersHoldTheSlabsOverwritesFillNewSlabsInTurn() {
        var table = EntryTable()
        for number in 0..<20_000 { table.set("k/\(number)", to: .make(entry("k/\(number)", value(0, size: 100), version: 1))) }
        let loaded = table.slabCount
        let copy = table.order
        // In no order: each held slab soon has cells given back.
        for step in 0..<20_000 {
            let key = "k/\(step * 7_919 % 20_000)"
            table.set(key, to: .make(entry(key, value(1, size: 100), version: 2)))
        }
        // As many again, give or take the first slabs' growing sizes.
        #expect(table.slabCount <= 2 * loaded + 8, "\(loaded) slabs loaded, \(table.slabCount) after")
        #expect(EntryTable.entries(in: copy, withPrefix: "").allSatisfy { $0.version == 1 })
    }

    @Test func anEntryLargerThanACellHasASlabOfItsOwnThatGoesWithIt() {
        var table = EntryTable()
        let large = String(repeating: "x", count: 100_000)
        for step in 1...20 { table.set("big", to: .make(entry("big", "\(step)" + large, version: UInt64(step)))) }
        #expect(table.slabCount == 1)
        #expect(table["big"]?.entry().value == Data(("20" + large).utf8))
        table.set("big", to: nil)
        #expect(table.slabCount == 0)
    }

    /// Random puts and deletes of values of many sizes, with copies of the order and entries held
    /// for a while at random: each copy and each held entry is checked against what it was when
    /// taken, and the table against a dictionary.
    @Test func agreesWithADictionaryWhileCopiesAndHeldEntriesComeAndGo() {
        var generator = SystemRandomNumberGenerator()
        var table = EntryTable()
        var model: [String: Entry] = [:]
        var copies: [(order: KeyOrder, expected: [Entry])] = []
        var held: [(entry: StoredEntry, expected: Entry)] = []
        for step in 1...20_000 {
            let key = "k/\(Int.random(in: 0..<400, using: &generator))"
            if Int.random(in: 0..<4, using: &generator) > 0 {
                let size = [1, 50, 100, 250, 1_000, 5_000][Int.random(in: 0..<6, using: &generator)]
                let new = entry(key, value(step, size: size), version: UInt64(step))
                table.set(key, to: .make(new))
                model[key] = new
            } else {
                table.set(key, to: nil)
                model[key] = nil
            }
            if step % 500 == 0 {
                copies.append((table.order, model.keys.sorted(by: KeyByteOrder.precedes).map { model[$0]! }))
            }
            if step % 97 == 0, let stored = table[key] { held.append((stored, model[key]!)) }
            if copies.count > 3 {
                let (order, expected) = copies.removeFirst()
                #expect(EntryTable.entries(in: order, withPrefix: "").map { $0.entry() } == expected)
            }
            if held.count > 20 {
                let (stored, expected) = held.removeFirst()
                #expect(stored.entry() == expected)
            }
        }
        for (order, expected) in copies { #expect(EntryTable.entries(in: order, withPrefix: "").map { $0.entry() } == expected) }
        for (stored, expected) in held { #expect(stored.entry() == expected) }
        #expect(table.entries(withPrefix: "").map { $0.entry() } == model.keys.sorted(by: KeyByteOrder.precedes).map { model[$0]! })
    }
}

/// Planning makes a put's entry in a cell of the published table (``EntryTable/makeCell(byteCount:)``):
/// publishing stores that cell as it is, and a cell never published goes back.
@Suite struct EntryCellTests {
    private func write(_ cell: EntryCell, _ key: String, _ value: String, version: UInt64) -> StoredEntry {
        var key = key
        var value = value
        let numbers = StoredEntry.Numbers(version: version, createRevision: 1, modRevision: version, ephemeralSession: 0)
        return key.withUTF8 { key in value.withUTF8 { value in cell.write(key: key, value: value, numbers: numbers) } }
    }

    private func cell(in table: inout EntryTable, _ key: String, _ value: String, version: UInt64) -> EntryCell {
        let numbers = StoredEntry.Numbers(version: version, createRevision: 1, modRevision: version, ephemeralSession: 0)
        return table.makeCell(byteCount: EntryBytes.count(key: key.utf8.count, value: value.utf8.count, numbers: numbers))
    }

    @Test func anEntryMadeInATableCellIsStoredWithoutACopy() {
        var table = EntryTable()
        let made = write(cell(in: &table, "k", "1", version: 1), "k", "1", version: 1)
        table.set("k", to: made)
        #expect(table["k"]?.isStored(as: made) == true)
        #expect(table["k"]?.entry() == made.entry())
        // An entry of its own is copied.
        let own = StoredEntry.make(made.entry())
        table.set("k", to: own)
        #expect(table["k"]?.isStored(as: own) == false)
        #expect(table["k"]?.entry() == own.entry())
    }

    @Test func anEntrySetAgainUnderItsKeyKeepsItsCell() {
        var table = EntryTable()
        let expected = Entry(key: "k", value: Data("1".utf8), version: 1, createRevision: 1, modRevision: 1)
        table.set("k", to: .make(expected))
        table.set("k", to: table["k"])
        // An entry of the same size, made when nothing but the table holds the slab: a cell given
        // back by mistake would be the one it takes.
        table.set("j", to: .make(Entry(key: "j", value: Data("2".utf8), version: 1, createRevision: 1, modRevision: 1)))
        #expect(table["k"]?.entry() == expected)
        #expect(table.count == 2)
    }

    @Test func cellsNeverPublishedGoBack() {
        var table = EntryTable()
        table.set("kept", to: .make(Entry(key: "kept", value: Data("1".utf8), version: 1, createRevision: 1, modRevision: 1)))
        let slabs = table.slabCount
        // Groups planned and then refused, each cell discarded: the arena takes them back
        // instead of growing by 64 KB slabs.
        for step in 1...20_000 {
            let value = String(repeating: "v", count: 50 + step % 150)
            let entry = write(cell(in: &table, "k/\(step)", value, version: 1), "k/\(step)", value, version: 1)
            #expect(entry.key == "k/\(step)")
            table.discard(entry)
        }
        #expect(table.slabCount <= slabs + 40, "\(table.slabCount) slabs")
        #expect(table.count == 1)
        // A discarded entry anyone still holds reads the same: its cell waits for it.
        let held = write(cell(in: &table, "held", "before", version: 1), "held", "before", version: 1)
        table.discard(held)
        for step in 1...1_000 {
            table.set(
                "o/\(step)", to: .make(Entry(key: "o/\(step)", value: Data("xxxxxx".utf8), version: 1, createRevision: 1, modRevision: 1)))
        }
        #expect(held.entry().value == Data("before".utf8))
    }
}

/// Start-up builds the table on a thread of its own (``EntryTableBuilder``) and then replays the
/// log over it: the table it hands over must be the caller's alone, or its arena reuses no cell.
@Suite struct EntryTableBuilderTests {
    @Test func aBuiltTableIsTheCallersAloneAndReusesItsCells() {
        let builder = EntryTableBuilder(capacity: 100)
        var batch = EncodedEntries()
        for number in 0..<100 {
            var key = "k/\(number)"
            var value = "\"loaded\""
            key.withUTF8 { key in
                value.withUTF8 { value in
                    batch.append(key: key, value: value, numbers: .init(version: 1, createRevision: 1, modRevision: 1, ephemeralSession: 0))
                }
            }
        }
        builder.add(batch)
        var table = builder.finish()
        for step in 1...20_000 {
            let key = "k/\(step % 100)"
            let replayed = Entry(key: key, value: Data("\"replayed\"".utf8), version: 2, createRevision: 1, modRevision: UInt64(step))
            table.set(key, to: .make(replayed))
        }
        #expect(table.count == 100)
        // 100 entries of one or two size classes: a few slabs, not one for each 4–64 KB replayed.
        #expect(table.slabCount <= 8, "\(table.slabCount) slabs")
        withExtendedLifetime(builder) {}
    }
}
