import Foundation
import SyncClient

/// One change as `watch` and `history` print it.
enum ChangeLine {
    /// Who made a change, as far as the printing command knows: a watch knows the session and the
    /// cause, a history also the session's client.
    struct Origin {
        var session: UInt64
        var clientName: String?
        var pid: Int32 = 0
        var cause: String

        init(session: UInt64, cause: String) {
            self.session = session
            self.cause = cause
        }

        init(_ origin: ChangeOrigin) {
            self.session = origin.writer.sessionID
            self.clientName = origin.writer.clientName.isEmpty ? nil : origin.writer.clientName
            self.pid = origin.writer.pid
            self.cause = origin.cause
        }
    }

    /// `{"revision":R,"type":"put","key":K,"value":V,"version":N}` with `json` (a delete has no
    /// value), else `R put KEY VALUE` / `R delete KEY`; with an origin, also who made it:
    /// `"session"`, `"client"`, `"pid"` (to administrators) and `"cause"` when known, or
    /// `  by CLIENT (session S, pid P): CAUSE`; with a patch, its JSON Patch as `"patch"`.
    static func render(_ change: Change, json: Bool, origin: Origin? = nil, patch: JSONDiff? = nil) -> String {
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
            if let origin {
                object = object.number("session", origin.session)
                if let clientName = origin.clientName { object = object.string("client", clientName) }
                if origin.pid != 0 { object = object.number("pid", origin.pid) }
                if !origin.cause.isEmpty { object = object.string("cause", origin.cause) }
            }
            if let patch { object = object.raw("patch", Data(DiffLines.patchJSON(patch).utf8)) }
            return object.rendered
        }
        let line =
            switch change.type {
            case .put: "\(change.revision) put \(change.key) \(String(decoding: change.entry.value, as: UTF8.self))"
            case .delete: "\(change.revision) delete \(change.key)"
            }
        guard let origin else { return line }
        var who = origin.clientName.map { "\($0) (session \(origin.session)" } ?? "(session \(origin.session)"
        if origin.pid != 0 { who += ", pid \(origin.pid)" }
        who += ")"
        return line + "  by " + who + (origin.cause.isEmpty ? "" : ": " + origin.cause)
    }
}
