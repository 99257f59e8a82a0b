#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The watches of a ``WatchRegistry``, found by the keys they select, so that a change costs what
/// its own watchers cost rather than what every watch costs.
///
/// Watches are kept by the exact bytes of each prefix they select, with a count of the prefixes
/// of each byte length. A key's watches are then found by looking up the key's own prefixes of
/// the lengths in use: as many hash lookups as there are distinct prefix lengths (a handful in
/// practice), whatever the number of watches. A watch of every key (no prefix, or the empty one)
/// is kept apart: it selects every change.
///
/// Prefixes match bytes, as ``KeyRules/key(_:hasPrefix:)`` does: two spellings of the same
/// character (precomposed or not) are different prefixes, and a key's prefix that cuts a
/// character in two matches nothing.
package struct WatchIndex<Member: Hashable> {
    /// Watches that select every key.
    private(set) var everything: Set<Member> = []
    private var byPrefix: [BytePrefix: Set<Member>] = [:]
    /// How many indexed prefixes have each length in bytes.
    private var lengthCounts: [Int: Int] = [:]
    /// The lengths of `lengthCounts`, shortest first.
    private var lengths: [Int] = []

    /// Whether `prefixes` select every key.
    static func selectsEverything(_ prefixes: [String]) -> Bool {
        prefixes.isEmpty || prefixes.contains("")
    }

    /// Adds `member`, which selects the keys under `prefixes`.
    mutating func insert(_ member: Member, prefixes: [String]) {
        if Self.selectsEverything(prefixes) {
            everything.insert(member)
            return
        }
        // Distinct as bytes: a `Set` of `String`s would take `é` and `e\u{301}` for one prefix.
        for prefix in Set(prefixes.map { BytePrefix($0.utf8[...]) }) {
            let inserted = byPrefix[prefix, default: []].insert(member).inserted
            if inserted { count(length: prefix.bytes.count, by: 1) }
        }
    }

    /// Removes `member`, which was added with `prefixes`.
    mutating func remove(_ member: Member, prefixes: [String]) {
        if Self.selectsEverything(prefixes) {
            everything.remove(member)
            return
        }
        for prefix in Set(prefixes.map { BytePrefix($0.utf8[...]) }) {
            guard byPrefix[prefix]?.remove(member) != nil else { continue }
            if byPrefix[prefix]?.isEmpty == true { byPrefix[prefix] = nil }
            count(length: prefix.bytes.count, by: -1)
        }
    }

    /// Calls `body` with each member one of whose prefixes `key` starts with (not those of
    /// ``everything``); a member with two such prefixes comes twice.
    func forEachMember(selecting key: String, _ body: (Member) -> Void) {
        let bytes = key.utf8
        var end = bytes.startIndex
        var consumed = 0
        for length in lengths {
            guard length <= bytes.count else { return }
            end = bytes.index(end, offsetBy: length - consumed)
            consumed = length
            // A prefix never ends inside a character: skip a cut that would.
            if end != bytes.endIndex, UTF8.isContinuation(bytes[end]) { continue }
            guard let members = byPrefix[BytePrefix(bytes[..<end])] else { continue }
            for member in members { body(member) }
        }
    }

    private mutating func count(length: Int, by change: Int) {
        let count = lengthCounts[length, default: 0] + change
        lengthCounts[length] = count == 0 ? nil : count
        if count == 0 || (count == 1 && change > 0) { lengths = lengthCounts.keys.sorted() }
    }
}

/// The bytes of a prefix, compared and hashed as bytes (a `String` compares by canonical
/// equivalence, which would make `é` and `e\u{301}` the same prefix).
private struct BytePrefix: Hashable {
    let bytes: Substring.UTF8View

    init(_ bytes: Substring.UTF8View) {
        self.bytes = bytes
    }

    static func == (lhs: Self, rhs: Self) -> Bool {
        let count = lhs.bytes.count
        guard count == rhs.bytes.count else { return false }
        guard count > 0 else { return true }
        // Compared with `memcmp` where both are contiguous (native strings always are): the
        // generic `elementsEqual` of two UTF-8 views walks them index by index.
        let compared = lhs.bytes.withContiguousStorageIfAvailable { left in
            rhs.bytes.withContiguousStorageIfAvailable { right in memcmp(left.baseAddress!, right.baseAddress!, count) == 0 }
        }
        return (compared ?? nil) ?? lhs.bytes.elementsEqual(rhs.bytes)
    }

    func hash(into hasher: inout Hasher) {
        let hashed: Void? = bytes.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if hashed == nil {
            Array(bytes).withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }
}
