import Foundation
import SharedState
import Testing

@Suite struct MirroredStateTests {
    private func entry(_ key: String, _ value: String, revision: UInt64) -> Entry {
        Entry(key: key, value: Data(value.utf8), version: 1, createRevision: revision, modRevision: revision)
    }

    @Test func aResyncYieldsOnlyTheDifference() {
        var mirror = MirroredState()
        let first = mirror.apply(
            WatchBatch(kind: .snapshot, revision: 3, changes: [.put(entry("a", "1", revision: 1)), .put(entry("b", "1", revision: 2))])
        )
        #expect(first.map(\.key) == ["a", "b"])
        mirror.apply(WatchBatch(kind: .changes, revision: 4, changes: [.put(entry("c", "1", revision: 4))]))
        mirror.apply(WatchBatch(kind: .progress, revision: 5, changes: []))
        #expect(mirror.revision == 5)

        // Meanwhile: a unchanged, b deleted, c changed, d created.
        let difference = mirror.apply(
            WatchBatch(
                kind: .resync, revision: 9,
                changes: [.put(entry("a", "1", revision: 1)), .put(entry("c", "2", revision: 8)), .put(entry("d", "1", revision: 9))])
        )
        #expect(difference.map(\.key) == ["b", "c", "d"])
        #expect(difference.map(\.type) == [.delete, .put, .put])
        #expect(mirror.entries.keys.sorted() == ["a", "c", "d"])
    }
}
