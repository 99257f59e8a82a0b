import Foundation
import SharedStateWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension AccessPolicy {
    /// Reads and checks a policy file (see ``AccessPolicy``).
    ///
    /// - Throws: ``DaemonStartError`` naming the file, the line and the problem: invalid JSON, an
    ///   unknown field, an unknown user or group, a malformed prefix.
    static func load(path: String, daemonUser: uid_t = getuid()) throws(DaemonStartError) -> AccessPolicy {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw DaemonStartError("cannot read policy file \(path): \(error.localizedDescription)")
        }
        let text = String(decoding: data, as: UTF8.self)
        func failure(_ message: String, near needle: String? = nil, occurrence: Int = 0) -> DaemonStartError {
            let line = needle.flatMap { Self.line(of: $0, in: text, occurrence: occurrence) }
            return DaemonStartError("policy file \(path)\(line.map { ", line \($0)" } ?? ""): \(message)")
        }

        let root: Any
        do {
            root = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw failure("not valid JSON (\(Self.describe(error)))")
        }
        guard let object = root as? [String: Any] else { throw failure("the top level must be an object with \"grants\"") }
        for key in object.keys where key != "grants" {
            throw failure("unknown field \"\(key)\" (only \"grants\" is allowed)", near: "\"\(key)\"")
        }
        guard let entries = object["grants"] as? [Any] else { throw failure("\"grants\" must be an array of grants", near: "\"grants\"") }

        var grants: [Grant] = []
        for (index, entry) in entries.enumerated() {
            guard let fields = entry as? [String: Any] else {
                throw failure("grant \(index + 1) must be an object", near: "{", occurrence: index + 1)
            }
            let near = "\"prefix\""
            for key in fields.keys where !["prefix", "users", "groups", "read", "write"].contains(key) {
                throw failure("grant \(index + 1) has an unknown field \"\(key)\"", near: "\"\(key)\"")
            }
            guard let prefix = fields["prefix"] as? String else {
                throw failure("grant \(index + 1) needs a \"prefix\" string (\"\" for every key)", near: near, occurrence: index)
            }
            do throws(SharedStateError) {
                try KeyRules.validatePrefix(prefix)
            } catch {
                throw failure("grant \(index + 1): \(error.message)", near: near, occurrence: index)
            }
            let users = try Self.ids(fields["users"], grant: index + 1, kind: "user", text: text, failure: failure) { name in
                getpwnam(name).map { $0.pointee.pw_uid }
            }
            let groups = try Self.ids(fields["groups"], grant: index + 1, kind: "group", text: text, failure: failure) { name in
                getgrnam(name).map { $0.pointee.gr_gid }
            }
            var access: [String: Bool] = [:]
            for key in ["read", "write"] {
                guard let value = fields[key] else { continue }
                guard let flag = value as? Bool else {
                    throw failure("grant \(index + 1): \"\(key)\" must be true or false", near: "\"\(key)\"")
                }
                access[key] = flag
            }
            if users.isEmpty && groups.isEmpty {
                throw failure("grant \(index + 1) names no \"users\" and no \"groups\"", near: near, occurrence: index)
            }
            if access["read"] != true && access["write"] != true {
                throw failure("grant \(index + 1) grants neither \"read\" nor \"write\"", near: near, occurrence: index)
            }
            grants.append(Grant(prefix: prefix, users: users, groups: groups, read: access["read"] == true, write: access["write"] == true))
        }
        return AccessPolicy(grants: grants, administrators: [0, daemonUser])
    }

    private static func ids(
        _ value: Any?,
        grant: Int,
        kind: String,
        text: String,
        failure: (String, String?, Int) -> DaemonStartError,
        lookUp: (String) -> UInt32?
    ) throws(DaemonStartError) -> Set<UInt32> {
        guard let value else { return [] }
        guard let list = value as? [Any] else {
            throw failure("grant \(grant): \"\(kind)s\" must be a list of names or numbers", "\"\(kind)s\"", 0)
        }
        var ids = Set<UInt32>()
        for item in list {
            if let name = item as? String {
                guard let id = lookUp(name) else { throw failure("grant \(grant): unknown \(kind) \"\(name)\"", "\"\(name)\"", 0) }
                ids.insert(id)
            } else if let number = item as? NSNumber, let id = UInt32(exactly: number.doubleValue) {
                ids.insert(id)
            } else {
                throw failure("grant \(grant): \"\(kind)s\" must hold names or numbers, not \(item)", "\"\(kind)s\"", 0)
            }
        }
        return ids
    }

    /// The 1-based line of the `occurrence`-th (0-based) appearance of `needle` in `text`.
    private static func line(of needle: String, in text: String, occurrence: Int) -> Int? {
        var searchStart = text.startIndex
        var found: Range<String.Index>?
        for _ in 0...occurrence {
            guard let range = text.range(of: needle, range: searchStart..<text.endIndex) else { return nil }
            found = range
            searchStart = range.upperBound
        }
        guard let found else { return nil }
        return text[..<found.lowerBound].reduce(1) { $1 == "\n" ? $0 + 1 : $0 }
    }

    private static func describe(_ error: any Error) -> String {
        let nsError = error as NSError
        return (nsError.userInfo[NSDebugDescriptionErrorKey] as? String) ?? nsError.localizedDescription
    }
}
