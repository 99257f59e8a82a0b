import Foundation

/// What a restore narrowed off the writer was narrowed against.
package struct RestoreBasis: Sendable {
    /// The revision of the state the restore's candidates were found against.
    package var revision: UInt64
    /// The whole backup, in byte order of its keys: where a key written since `revision` is
    /// looked up.
    package var backup: [Entry]

    package init(revision: UInt64, backup: [Entry]) {
        self.revision = revision
        self.backup = backup
    }

    /// The backup's entry for `key`, if it has one (a binary search).
    package func backupEntry(_ key: String) -> Entry? {
        var low = backup.startIndex
        var high = backup.endIndex
        while low < high {
            let middle = (low + high) / 2
            if KeyByteOrder.precedes(backup[middle].key, key) { low = middle + 1 } else { high = middle }
        }
        return low < backup.endIndex && backup[low].key == key ? backup[low] : nil
    }
}
