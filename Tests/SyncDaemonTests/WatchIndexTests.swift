import Foundation
import NIOCore
import SharedStateWire
import TestSupport
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

/// The watch index against a brute-force matcher: the same members for every key, whatever the
/// prefixes, including byte-level edge cases.
extension WatchRegistry {
    /// Delivers `revisions` in a round of their own, handed to syncd's sink at once.
    @discardableResult
    mutating func deliver(_ revisions: [CommittedRevision]) -> Int {
        var round = DeliveryRound()
        let delivered = deliver(revisions, into: &round)
        ConnectionDelivery().deliver(round)?()
        return delivered
    }
}

@Suite struct WatchIndexTests {
    /// Pieces keys and prefixes are made of: separators, words that prefix each other, and
    /// characters with two spellings or several bytes.
    static let pieces = ["a", "b", "/", "s", "session", "sessions/", "é", "e\u{301}", "e", "日本", "x/", "\u{1F600}", "Ã"]

    static func randomString(pieces range: ClosedRange<Int>, using generator: inout SeededGenerator) -> String {
        (0..<Int.random(in: range, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
    }

    /// What the index must answer: the members one of whose prefixes `key` starts with, byte for byte.
    static func bruteForce(_ members: [Int: [String]], _ key: String) -> Set<Int> {
        Set(
            members.filter { _, prefixes in
                WatchIndex<Int>.selectsEverything(prefixes) || prefixes.contains { key.utf8.starts(with: $0.utf8) }
            }.keys)
    }

    static func indexed(_ index: WatchIndex<Int>, _ key: String) -> Set<Int> {
        var found = index.everything
        index.forEachMember(selecting: key) { found.insert($0) }
        return found
    }

    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6, 7, 8])
    func agreesWithBruteForceOnRandomKeysAndPrefixes(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        var index = WatchIndex<Int>()
        var members: [Int: [String]] = [:]
        for member in 0..<300 {
            let prefixes = (0..<Int.random(in: 0...3, using: &generator)).map { _ in
                Self.randomString(pieces: 0...3, using: &generator)
            }
            // Mostly prefixed watches; now and then one of every key.
            if prefixes.isEmpty && Bool.random(using: &generator) { continue }
            index.insert(member, prefixes: prefixes)
            members[member] = prefixes
        }
        for member in members.keys.shuffled(using: &generator).prefix(100) {
            index.remove(member, prefixes: members[member]!)
            members[member] = nil
        }
        for _ in 0..<1_000 {
            let key: String = Self.randomString(pieces: 1...5, using: &generator)
            let indexed = Self.indexed(index, key)
            let expected = Self.bruteForce(members, key)
            let differing = indexed.symmetricDifference(expected).map { "\($0): \(members[$0].map { $0.map(\.debugDescription) } ?? [])" }
            #expect(indexed == expected, "key \(key.debugDescription): \(differing)")
        }
    }

    @Test func prefixesMatchBytesNotCharacters() {
        var index = WatchIndex<Int>()
        let members = [
            1: ["session"], 2: ["sessions/"], 3: ["é"], 4: ["e\u{301}"], 5: ["e"], 6: [""], 7: [], 8: ["日"],
        ]
        for (member, prefixes) in members { index.insert(member, prefixes: prefixes) }
        // A prefix is bytes: "session" is a prefix of "sessions/x".
        #expect(Self.indexed(index, "sessions/x") == [1, 2, 6, 7])
        #expect(Self.indexed(index, "session") == [1, 6, 7])
        // Precomposed and decomposed é are different prefixes; the decomposed one starts with "e".
        #expect(Self.indexed(index, "é/door") == [3, 6, 7])
        #expect(Self.indexed(index, "e\u{301}/door") == [4, 5, 6, 7])
        // "日" is three bytes; "日本" starts with them, "旧" (whose first byte is the same) does not.
        #expect(Self.indexed(index, "日本") == [6, 7, 8])
        #expect(Self.indexed(index, "旧") == [6, 7])
        index.remove(6, prefixes: [""])
        index.remove(7, prefixes: [])
        index.remove(1, prefixes: ["session"])
        #expect(Self.indexed(index, "sessions/x") == [2])
    }

    @Test func aWatchAddedTwiceUnderItsIDReplacesTheFirstInTheIndex() {
        var registry = WatchRegistry()
        let subscriber = CollectingSubscriber()
        registry.add(.init(id: 1, prefixes: ["a/"], readable: nil, subscriber: subscriber, backlog: subscriber.backlog, startsAfter: 0))
        registry.add(.init(id: 1, prefixes: ["b/"], readable: nil, subscriber: subscriber, backlog: subscriber.backlog, startsAfter: 0))
        registry.deliver([CommittedRevision(revision: 1, changes: [.put(Self.entry("a/1", revision: 1))])])
        registry.deliver([CommittedRevision(revision: 2, changes: [.put(Self.entry("b/1", revision: 2))])])
        #expect(subscriber.events.map(\.revision) == [2])
        #expect(registry.count(of: subscriber) == 1)
        registry.removeAll(of: subscriber)
        #expect(registry.count == 0)
    }

    /// Many subscribers with random watches (some limited by a read filter) and random revisions:
    /// each watch receives exactly the changes a brute-force check selects, one frame per revision.
    @Test(arguments: [UInt64(11), 12, 13])
    func theRegistryDeliversWhatBruteForceSelects(seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        var registry = WatchRegistry()
        var watches: [(subscriber: CollectingSubscriber, id: UInt64, prefixes: [String], readable: KeyFilter?)] = []
        let subscribers = (0..<20).map { _ in CollectingSubscriber() }
        for subscriber in subscribers {
            for id in UInt64(1)...UInt64(Int.random(in: 1...5, using: &generator)) {
                let prefixes = (0..<Int.random(in: 0...2, using: &generator)).map { _ in
                    Self.randomString(pieces: 1...2, using: &generator)
                }
                var readable: KeyFilter?
                if Bool.random(using: &generator) {
                    readable = KeyFilter(
                        readablePrefixes: (0..<Int.random(in: 0...3, using: &generator)).map { _ in
                            Self.randomString(pieces: 1...2, using: &generator)
                        })
                }
                registry.add(
                    .init(
                        id: id, prefixes: prefixes, readable: readable, subscriber: subscriber, backlog: subscriber.backlog, startsAfter: 0)
                )
                watches.append((subscriber, id, prefixes, readable))
            }
        }
        var revisions: [CommittedRevision] = []
        for revision in UInt64(1)...200 {
            let keys = Set((0..<Int.random(in: 1...3, using: &generator)).map { _ in Self.randomString(pieces: 1...4, using: &generator) })
            revisions.append(
                CommittedRevision(revision: revision, changes: keys.sorted().map { Change.put(Self.entry($0, revision: revision)) }))
        }
        // Delivered in batches, as the writer commits groups.
        var start = 0
        while start < revisions.count {
            let end = min(revisions.count, start + Int.random(in: 1...8, using: &generator))
            registry.deliver(Array(revisions[start..<end]))
            start = end
        }
        for watch in watches {
            var changesByRevision: [UInt64: [String]] = [:]
            for revision in revisions {
                let keys = revision.changes.map(\.entry.key).filter { key in
                    (WatchIndex<Int>.selectsEverything(watch.prefixes) || watch.prefixes.contains { key.utf8.starts(with: $0.utf8) })
                        && watch.readable?(key) != false
                }
                if !keys.isEmpty { changesByRevision[revision.revision] = keys }
            }
            let received = watch.subscriber.events.filter { $0.watchID == watch.id }
            #expect(received.map(\.revision) == changesByRevision.keys.sorted(), "watch \(watch.id) \(watch.prefixes)")
            for event in received {
                #expect(event.changes.map(\.entry.key) == changesByRevision[event.revision])
            }
        }
    }

    static func entry(_ key: String, revision: UInt64) -> Entry {
        Entry(key: key, value: Data("1".utf8), version: 1, createRevision: revision, modRevision: revision)
    }
}
