import Foundation
import SharedStateWire

extension Change {
    /// What this change did inside the key's JSON value: the diff from `previous` to the value
    /// it left (none for a delete). Nil when the value before is `Previous/unknown`; ask a
    /// watch for previous values to know it (``SharedStateClient/watch(prefixes:start:previousValues:)``).
    ///
    /// ```swift
    /// for try await batch in client.watch(prefixes: ["door/"], start: .now, previousValues: true) {
    ///     for change in batch.changes {
    ///         for operation in try change.diff()?.operations ?? [] { print(operation.op, operation.path) }
    ///     }
    /// }
    /// ```
    ///
    /// - Throws: `DecodingError` when a value is not JSON.
    public func diff() throws -> JSONDiff? {
        let before: Data?
        switch previous {
        case .unknown: return nil
        case .absent: before = nil
        case .entry(let entry): before = entry.value
        }
        return try JSONDiff(from: before, to: type == .put ? entry.value : nil)
    }
}
