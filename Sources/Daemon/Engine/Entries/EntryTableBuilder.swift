import Foundation

/// Builds an ``EntryTable`` on a thread of its own from batches of entries handed to it in key
/// order, so that reading the entries from the database and indexing them share the machine's
/// cores at start-up instead of taking turns on one.
///
/// With a million keys, indexing is a cache miss per entry and reading is SQLite's work per row;
/// side by side they take about as long as the slower of the two.
package final class EntryTableBuilder: @unchecked Sendable {
    // Everything below is reached only with `condition` locked.
    private let condition = NSCondition()
    private var pending: [EncodedEntries] = []
    private var isComplete = false
    private var built: EntryTable?

    /// Starts the thread that builds a table with room for `capacity` entries.
    package init(capacity: Int) {
        let thread = Thread { [self] in build(capacity: capacity) }
        thread.name = "syncd-load"
        thread.start()
    }

    /// How many batches may wait for the builder: a reader faster than it waits, instead of
    /// piling up batches (memory the allocator keeps after start-up).
    private static let pendingLimit = 2

    /// Hands over the next entries, in key order after those handed over before; waits while
    /// the builder is behind.
    package func add(_ batch: EncodedEntries) {
        guard batch.count > 0 else { return }
        condition.lock()
        while pending.count >= Self.pendingLimit { condition.wait() }
        pending.append(batch)
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until every entry handed over is in the table, and returns it.
    package func finish() -> EntryTable {
        condition.lock()
        defer { condition.unlock() }
        isComplete = true
        condition.broadcast()
        while built == nil { condition.wait() }
        // Handed over, not shared: a table this still held would be copied on its first change
        // (the index, the order's chunks), and its arena would reuse no cell, since a shared
        // ``EntrySlabs`` means a reader may hold them (replaying a long log after a crash then
        // took a new cell for every revision).
        let table = built!
        built = nil
        return table
    }

    private func build(capacity: Int) {
        var table = EntryTable(capacity: capacity)
        while true {
            condition.lock()
            while pending.isEmpty && !isComplete { condition.wait() }
            let batches = pending
            pending.removeAll()
            let isLast = isComplete && batches.isEmpty
            condition.broadcast()
            condition.unlock()
            if isLast { break }
            for batch in batches {
                batch.forEach { bytes, count in table.insert(copying: bytes, count: count) }
            }
        }
        condition.lock()
        built = table
        condition.broadcast()
        condition.unlock()
    }
}
