import Foundation
import SharedStateWire
import TestSupport
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

/// The table's key order against a brute-force sort: the same entries under every prefix, in byte
/// order of their keys, through insertions, replacements, removals and chunk splits.
@Suite struct KeyOrderTests {
    @Test(arguments: [UInt64(21), 22, 23, 24])
    func rangesAgreeWithASortedScan(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        var table = EntryTable()
        var keys: [[UInt8]: UInt64] = [:]
        func randomKey() -> String {
            WatchIndexTests.randomString(pieces: 1...4, using: &generator)
        }
        for step in 0..<6_000 {
            let key = randomKey()
            // More writes than deletions, so the table grows through several merges.
            if Int.random(in: 0..<3, using: &generator) == 0 {
                table.set(key, to: nil)
                keys[Array(key.utf8)] = nil
            } else {
                table.set(key, to: StoredEntry.make(WatchIndexTests.entry(key, revision: UInt64(step + 1))))
                keys[Array(key.utf8)] = UInt64(step + 1)
            }
            guard step % 500 == 0 else { continue }
            for _ in 0..<20 {
                let prefix = Bool.random(using: &generator) ? "" : WatchIndexTests.randomString(pieces: 1...2, using: &generator)
                let limit = Bool.random(using: &generator) ? Int.random(in: 1...20, using: &generator) : nil
                var expected = keys.filter { $0.key.starts(with: prefix.utf8) }.sorted { $0.key.lexicographicallyPrecedes($1.key) }
                    .map { "\($0.key) at \($0.value)" }
                if let limit { expected = Array(expected.prefix(limit)) }
                let found = table.entries(withPrefix: prefix, limit: limit).map { "\(Array($0.key.utf8)) at \($0.entry().modRevision)" }
                #expect(found == expected, "prefix \(prefix.debugDescription), limit \(String(describing: limit))")
                let all = keys.keys.count { $0.starts(with: prefix.utf8) }
                #expect(table.order.count(withPrefix: prefix) == all, "count of prefix \(prefix.debugDescription)")
            }
        }
        #expect(table.count == keys.count)
    }

    /// Overwrites find the entry they replace at the place remembered for their key, unless
    /// keys added or removed before it, or a chunk split, moved it: then by key. Either way the
    /// order holds each key once, with its last entry.
    @Test func overwritesOfHotKeysStayRightWhileEntriesMoveAroundThem() {
        var generator = SeededGenerator(seed: 38)
        var table = EntryTable()
        var latest: [String: UInt64] = [:]
        let hot = (0..<40).map { "hot/" + String(format: "%03d", $0 * 25) }
        for step in 1...30_000 {
            let key: String
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<6: key = hot.randomElement(using: &generator)!
            case 6..<9: key = "hot/" + String(format: "%03d", Int.random(in: 0..<1_000, using: &generator))
            default: key = "a/" + String(Int.random(in: 0..<3_000, using: &generator))
            }
            if !hot.contains(key), Int.random(in: 0..<3, using: &generator) == 0 {
                table.set(key, to: nil)
                latest[key] = nil
            } else {
                table.set(key, to: StoredEntry.make(WatchIndexTests.entry(key, revision: UInt64(step))))
                latest[key] = UInt64(step)
            }
            guard step % 3_000 == 0 else { continue }
            let found = table.entries(withPrefix: "").map { "\($0.key) at \($0.entry().modRevision)" }
            let expected = latest.sorted { KeyByteOrder.precedes($0.key, $1.key) }.map { "\($0.key) at \($0.value)" }
            #expect(found == expected, "after \(step) writes")
        }
    }

    @Test func keysInsertedInOrderAreAppendedAndRemovedKeysComeBack() {
        var table = EntryTable()
        for index in 0..<1_000 {
            let key = "k/" + String(format: "%04d", index)
            table.insert(StoredEntry.make(WatchIndexTests.entry(key, revision: UInt64(index + 1))))
        }
        #expect(table.entries(withPrefix: "k/09", limit: 3).map(\.key) == ["k/0900", "k/0901", "k/0902"])
        table.set("k/0901", to: nil)
        #expect(table.entries(withPrefix: "k/09", limit: 3).map(\.key) == ["k/0900", "k/0902", "k/0903"])
        table.set("k/0901", to: StoredEntry.make(WatchIndexTests.entry("k/0901", revision: 2_000)))
        #expect(table.entries(withPrefix: "k/090").map(\.key) == (0..<10).map { "k/090\($0)" })
        #expect(table.entries(withPrefix: "k/0901").first?.entry().modRevision == 2_000)
    }

    @Test func aCopyOfTheOrderStaysAsItWasWhileTheTableChanges() {
        var table = EntryTable()
        for index in 0..<2_000 {
            table.insert(StoredEntry.make(WatchIndexTests.entry("k/" + String(format: "%04d", index), revision: 1)))
        }
        let copy = table.order
        for index in stride(from: 0, to: 2_000, by: 7) {
            let key = "k/" + String(format: "%04d", index)
            table.set(key, to: index % 2 == 0 ? nil : StoredEntry.make(WatchIndexTests.entry(key, revision: 2)))
        }
        table.set("k/0000x", to: StoredEntry.make(WatchIndexTests.entry("k/0000x", revision: 3)))
        let copied = EntryTable.entries(in: copy, withPrefix: "k/")
        #expect(copied.count == 2_000)
        #expect(copied.allSatisfy { $0.entry().modRevision == 1 })
        #expect(table.entries(withPrefix: "k/").count == 2_000 - 143 + 1)
    }

    @Test func aCountNeedsNoEntryVisitedAndStopsWhereThePrefixEnds() {
        var table = EntryTable()
        #expect(table.order.count(withPrefix: "") == 0)
        // Over several chunks, with neighbours on both sides of the prefix's range.
        for index in 0..<3_000 {
            table.insert(StoredEntry.make(WatchIndexTests.entry("k/" + String(format: "%04d", index), revision: 1)))
        }
        table.set("j", to: StoredEntry.make(WatchIndexTests.entry("j", revision: 2)))
        table.set("l", to: StoredEntry.make(WatchIndexTests.entry("l", revision: 2)))
        #expect(table.order.count(withPrefix: "") == 3_002)
        #expect(table.order.count(withPrefix: "k/") == 3_000)
        #expect(table.order.count(withPrefix: "k/1") == 1_000)
        #expect(table.order.count(withPrefix: "k/0999") == 1)
        #expect(table.order.count(withPrefix: "k/5") == 0)
        #expect(table.order.count(withPrefix: "l") == 1)
        #expect(table.order.count(withPrefix: "m") == 0)
    }

    @Test func overlappingPrefixesAreCountedOnce() {
        #expect(StateEngine.disjointPrefixes(["a/b/", "a/", "b", "a/c"]) == ["a/", "b"])
        #expect(StateEngine.disjointPrefixes(["x", ""]) == [""])
        #expect(StateEngine.disjointPrefixes([]) == [""])
        #expect(StateEngine.disjointPrefixes(["é", "e\u{301}"]) == ["e\u{301}", "é"])
    }
}
