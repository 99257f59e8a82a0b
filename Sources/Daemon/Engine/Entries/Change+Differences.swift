import SharedStateWire

package extension Change {
    /// The changes that make `current` into `target`, all at `revision`, in key order: a put for
    /// each entry that differs, a delete for each key `target` lacks.
    static func differences(from current: [Entry], to target: [Entry], revision: UInt64) -> [Change] {
        let now = Dictionary(current.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        let wanted = Set(target.map(\.key))
        var changes = target.filter { now[$0.key] != $0 }.map(Change.put)
        changes += current.filter { !wanted.contains($0.key) }.map { Change.delete($0.key, revision: revision) }
        return changes.sorted { KeyByteOrder.precedes($0.key, $1.key) }
    }
}
