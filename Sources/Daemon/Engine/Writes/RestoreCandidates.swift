import Foundation
import SharedStateWire

/// The part of a restore worth planning: the backup's entries that may differ from the state, and
/// the state's keys the backup may lack. Found in one walk of both in byte order, comparing bytes,
/// so a restore of a million keys that changes ten costs the writer no lookup and no allocation per
/// unchanged key; `WritePlanner` then plans only the candidates.
package enum RestoreCandidates {
    /// The candidates among `backup` and the entries of `order`. `written` are the keys the writes
    /// planned before the restore in the same batch wrote: always candidates, since `order` does
    /// not show them yet.
    static func find(
        in backup: [Entry], against order: KeyOrder, written: Set<String>
    ) -> (entries: [Entry], currentKeys: [String]) {
        let backup = inByteOrder(backup)
        var entries: [Entry] = []
        var currentKeys: [String] = []
        var next = backup.startIndex
        order.forEach(withPrefix: "") { stored in
            stored.withKeyBytes { key in
                while next < backup.endIndex, compare(backup[next].key, key) < 0 {
                    if backup[next].ephemeralSession == 0 { entries.append(backup[next]) }
                    next += 1
                }
                let isWritten = !written.isEmpty && written.contains(stored.key)
                guard next < backup.endIndex, compare(backup[next].key, key) == 0 else {
                    if !isWritten { currentKeys.append(stored.key) }
                    return
                }
                let restored = backup[next]
                next += 1
                if restored.ephemeralSession != 0 {
                    // Its session is gone: the key goes.
                    if !isWritten { currentKeys.append(stored.key) }
                } else if isWritten || stored.ephemeralSession != 0 || !stored.hasValue(restored.value) {
                    entries.append(restored)
                }
            }
            return true
        }
        entries.append(contentsOf: backup[next...].filter { $0.ephemeralSession == 0 })
        currentKeys.append(contentsOf: written)
        return (entries, currentKeys)
    }

    /// The candidates found against the state at `basis.revision`, with the keys written since
    /// (`written`) added: a key the backup has becomes a candidate entry, any other a key to delete.
    /// `entries` and `currentKeys` are in byte order (as ``find(in:against:written:)`` returns
    /// them), so only the written keys are looked up, each by a binary search.
    static func adding(
        _ written: [String], to entries: [Entry], currentKeys: [String], basis: RestoreBasis
    ) -> (entries: [Entry], currentKeys: [String]) {
        guard !written.isEmpty else { return (entries, currentKeys) }
        var addedEntries: [Entry] = []
        var addedKeys: [String] = []
        for key in Set(written) {
            if let restored = basis.backupEntry(key), restored.ephemeralSession == 0 {
                if !contains(key, in: entries, by: \.key) { addedEntries.append(restored) }
            } else if !contains(key, in: currentKeys, by: \.self) {
                addedKeys.append(key)
            }
        }
        return (entries + addedEntries, currentKeys + addedKeys)
    }

    /// Whether `elements`, in byte order of their keys, hold one with `key`.
    private static func contains<Element>(_ key: String, in elements: [Element], by elementKey: (Element) -> String) -> Bool {
        var low = elements.startIndex
        var high = elements.endIndex
        while low < high {
            let middle = (low + high) / 2
            if KeyByteOrder.precedes(elementKey(elements[middle]), key) { low = middle + 1 } else { high = middle }
        }
        return low < elements.endIndex && elementKey(elements[low]) == key
    }

    /// `backup` sorted by the bytes of its keys; as it is when it already is.
    static func inByteOrder(_ backup: [Entry]) -> [Entry] {
        isInByteOrder(backup) ? backup : backup.sorted { KeyByteOrder.precedes($0.key, $1.key) }
    }

    private static func isInByteOrder(_ backup: [Entry]) -> Bool {
        zip(backup, backup.dropFirst()).allSatisfy { !KeyByteOrder.precedes($1.key, $0.key) }
    }

    private static func compare(_ key: String, _ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var key = key
        return key.withUTF8 { KeyByteOrder.compare($0, bytes) }
    }
}
