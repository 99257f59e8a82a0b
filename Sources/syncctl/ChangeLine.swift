import SyncClient

/// One change as `watch` and `history` print it.
enum ChangeLine {
    /// `{"revision":R,"type":"put","key":K,"value":V,"version":N}` with `json` (a delete has no
    /// value), else `R put KEY VALUE` / `R delete KEY`.
    static func render(_ change: Change, json: Bool) -> String {
        if json {
            var object = JSONObject()
                .number("revision", change.revision)
                .string("type", change.type.rawValue)
                .string("key", change.key)
            if change.type == .put {
                object = object.raw("value", change.entry.value).number("version", change.entry.version)
            } else {
                object = object.number("version", 0)
            }
            return object.rendered
        }
        switch change.type {
        case .put: return "\(change.revision) put \(change.key) \(String(decoding: change.entry.value, as: UTF8.self))"
        case .delete: return "\(change.revision) delete \(change.key)"
        }
    }
}
