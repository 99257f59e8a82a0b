import Foundation
import SyncClient

/// Builds one JSON object for syncctl's `--json` output, embedding stored values verbatim (they
/// are already JSON) instead of re-encoding them.
struct JSONObject {
    private var fields: [String] = []

    func string(_ name: String, _ value: String) -> JSONObject {
        adding(name, KeyRules.quoted(value))
    }

    func number(_ name: String, _ value: some BinaryInteger) -> JSONObject {
        adding(name, String(value))
    }

    func bool(_ name: String, _ value: Bool) -> JSONObject {
        adding(name, value ? "true" : "false")
    }

    func number(_ name: String, _ value: Double) -> JSONObject {
        adding(name, String(format: "%.3f", value))
    }

    /// A field whose value is already a JSON document; whitespace outside strings is dropped so
    /// the object stays on one line.
    func raw(_ name: String, _ json: Data) -> JSONObject {
        adding(name, Self.compacted(json))
    }

    var rendered: String { "{" + fields.joined(separator: ",") + "}" }

    /// The entry object of `get --json` and `list --json`.
    static func entry(_ entry: Entry) -> JSONObject {
        let object = JSONObject()
            .string("key", entry.key)
            .raw("value", entry.value)
            .number("version", entry.version)
            .number("createRevision", entry.createRevision)
            .number("modRevision", entry.modRevision)
        return entry.ephemeralSession == 0 ? object : object.number("ephemeralSession", entry.ephemeralSession)
    }

    /// A schema violation, with the sentence syncd's error says.
    static func violation(_ violation: SchemaViolation) -> JSONObject {
        let object = JSONObject()
            .string("key", violation.key)
            .string("pointer", violation.pointer)
            .string("rule", violation.rule)
            .string("limit", violation.limit)
            .string("reason", violation.reason)
            .string("prefix", violation.prefix)
            .string("message", violation.description)
        return violation.found.map { object.raw("found", Data($0.jsonText.utf8)) } ?? object
    }

    /// A client's watch, as `clients --details --json` and the inspector's client view give it.
    static func watch(_ watch: ClientInfo.WatchInfo) -> JSONObject {
        JSONObject()
            .number("id", watch.id)
            .array("prefixes", watch.prefixes.map(KeyRules.quoted))
            .bool("previousValues", watch.previousValues)
            .bool("catchingUp", watch.isCatchingUp)
            .bool("owesResync", watch.owesResync)
    }

    /// A field whose value is a JSON array of already rendered values.
    func array(_ name: String, _ rendered: [String]) -> JSONObject {
        adding(name, "[" + rendered.joined(separator: ",") + "]")
    }

    private func adding(_ name: String, _ rendered: String) -> JSONObject {
        var copy = self
        copy.fields.append(KeyRules.quoted(name) + ":" + rendered)
        return copy
    }

    /// A valid JSON document without the whitespace between its tokens.
    static func compacted(_ json: Data) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(json.count)
        var isInString = false
        var isEscaped = false
        for byte in json {
            if isInString {
                if isEscaped {
                    isEscaped = false
                } else if byte == UInt8(ascii: "\\") {
                    isEscaped = true
                } else if byte == UInt8(ascii: "\"") {
                    isInString = false
                }
            } else if byte == UInt8(ascii: "\"") {
                isInString = true
            } else if byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
                continue
            }
            bytes.append(byte)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

}
