import Foundation
import SharedStateWire
import Testing

@testable import SyncEngine

/// A stored entry gives back the key, value and numbers it was made with, whatever their sizes:
/// the numbers are kept as varints, in front of the key.
@Suite struct StoredEntryTests {
    @Test func givesBackEveryNumberKeyAndValueItWasMadeWith() {
        let numbers: [UInt64] = [0, 1, 127, 128, 16_383, 16_384, 1 << 32, UInt64.max - 1, .max]
        let keys = ["", "a", "door/locked", String(repeating: "ü/", count: 300)]
        let values = [Data(), Data("1".utf8), Data(repeating: UInt8(ascii: "7"), count: 100_000)]
        var index = 0
        for key in keys {
            for value in values {
                for _ in 0..<9 {
                    let entry = Entry(
                        key: key, value: value, version: numbers[index % 9], createRevision: numbers[(index + 3) % 9],
                        modRevision: numbers[(index + 5) % 9], ephemeralSession: numbers[(index + 7) % 9])
                    index += 1
                    let stored = StoredEntry.make(entry)
                    #expect(stored.entry() == entry)
                    #expect(stored.key == key)
                    #expect(stored.hasValue(value))
                    #expect(!stored.hasValue(value + Data("x".utf8)))
                    #expect(stored.entry(withValue: false).value.isEmpty)
                    #expect(
                        [stored.version, stored.createRevision, stored.modRevision, stored.ephemeralSession] == [
                            entry.version, entry.createRevision, entry.modRevision, entry.ephemeralSession,
                        ])
                    stored.withKeyAndValueBytes { storedKey, storedValue in
                        #expect(Array(storedKey) == Array(key.utf8))
                        #expect(Data(storedValue) == value)
                    }
                }
            }
        }
    }
}
