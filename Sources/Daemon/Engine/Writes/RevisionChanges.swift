import SharedStateWire

/// The changes one revision made, in order. Most revisions are a lone put: that one is kept as
/// its key and the entry the engine stores, so that planning, encoding and publishing it makes
/// no ``Change``, no `Entry` with a `Data` copy of the value and no one-element array (issue 38,
/// step 24). A ``Change`` is made only when one is read (a watch that asks for previous values
/// or for part of a revision, a restore's journal); the keys are read without one.
package struct RevisionChanges: Sendable, RandomAccessCollection, Equatable {
    private enum Storage: Sendable {
        case put(key: String, entry: StoredEntry)
        case list([Change])
    }

    private let storage: Storage

    /// The changes `changes`, in order.
    package init(_ changes: [Change]) {
        storage = .list(changes)
    }

    /// The put that left `entry` as `key`'s entry (`key` being the entry's own).
    init(put key: String, entry: StoredEntry) {
        storage = .put(key: key, entry: entry)
    }

    package var startIndex: Int { 0 }

    package var endIndex: Int {
        switch storage {
        case .put: 1
        case .list(let changes): changes.count
        }
    }

    /// The change at `index`, made anew for a lone put: read ``key(at:)`` where the key will do.
    package subscript(index: Int) -> Change {
        switch storage {
        case .put(let key, let entry):
            precondition(index == 0, "index out of range")
            return .put(entry.entry(key: key))
        case .list(let changes):
            return changes[index]
        }
    }

    /// The key of the change at `index`.
    package func key(at index: Int) -> String {
        switch storage {
        case .put(let key, _):
            precondition(index == 0, "index out of range")
            return key
        case .list(let changes):
            return changes[index].key
        }
    }

    /// The lone put's key and stored entry, for a revision that is one.
    var lonePut: (key: String, entry: StoredEntry)? {
        if case .put(let key, let entry) = storage { return (key, entry) }
        return nil
    }

    /// The changes when the revision is not a lone put, read in place.
    var list: [Change]? {
        if case .list(let changes) = storage { return changes }
        return nil
    }

    package static func == (lhs: RevisionChanges, rhs: RevisionChanges) -> Bool {
        lhs.elementsEqual(rhs)
    }
}
