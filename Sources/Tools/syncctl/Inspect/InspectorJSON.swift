import Foundation
import SyncClient

/// The JSON text of the inspector's answers (docs/INSPECTOR.md): objects of fields already
/// rendered, stored values embedded as syncd holds them, since they are JSON already.
enum InspectorJSON {
    static func object(_ fields: KeyValuePairs<String, String>) -> String {
        "{" + fields.map { KeyRules.quoted($0.key) + ":" + $0.value }.joined(separator: ",") + "}"
    }

    static func array(_ items: some Sequence<String>) -> String {
        "[" + items.joined(separator: ",") + "]"
    }

    static func string(_ text: String) -> String { KeyRules.quoted(text) }
    static func number(_ number: some BinaryInteger) -> String { String(number) }
    static func number(_ number: Double) -> String { number.isFinite ? String(format: "%.3f", number) : "0" }
    static func bool(_ value: Bool) -> String { value ? "true" : "false" }
    static let null = "null"

    /// A stored value; one larger than `limit` bytes as `{"truncated": BYTES}`.
    static func value(_ data: Data, limit: Int = .max) -> String {
        data.count > limit ? object(["truncated": number(data.count)]) : JSONObject.compacted(data)
    }

    static func writer(_ writer: InspectorWriters.Name) -> String {
        object(["sessionID": number(writer.sessionID), "name": string(writer.name), "pid": number(writer.pid)])
    }

    /// A change with the value before it and the JSON Patch between them; `previous` is null
    /// when the key did not exist or the entry before is not known (then `patch` is null too).
    static func change(_ change: Change, valueLimit: Int = .max) -> String {
        let isPut = change.type == .put
        let value = isPut ? Self.value(change.entry.value, limit: valueLimit) : null
        var previousValue: Data?
        var patch = null
        switch change.previous {
        case .entry(let entry):
            previousValue = entry.value
            if let diff = try? JSONDiff(from: entry.value, to: isPut ? change.entry.value : nil) { patch = DiffLines.patchJSON(diff) }
        case .absent:
            if let diff = try? JSONDiff(from: nil, to: isPut ? change.entry.value : nil) { patch = DiffLines.patchJSON(diff) }
        case .unknown:
            break
        }
        return object([
            "key": string(change.key),
            "type": string(isPut ? "put" : "delete"),
            "value": value,
            "previous": previousValue.map { Self.value($0, limit: valueLimit) } ?? null,
            "previousKnown": bool(change.previous != .unknown),
            "version": number(change.entry.version),
            "patch": patch,
        ])
    }

    /// One revision: its writer, its cause and its changes.
    static func revision(_ batch: WatchBatch, writer: InspectorWriters.Name, valueLimit: Int = .max) -> String {
        object([
            "revision": number(batch.revision),
            "writer": Self.writer(writer),
            "cause": string(batch.cause),
            "changes": array(batch.changes.map { change($0, valueLimit: valueLimit) }),
        ])
    }

    static func error(_ message: String, compactedRevision: UInt64? = nil) -> String {
        if let compactedRevision { return object(["error": string(message), "compactedRevision": number(compactedRevision)]) }
        return object(["error": string(message)])
    }
}
