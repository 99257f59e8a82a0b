import Foundation
import SharedStateWire
import SyncEngine

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

package extension AccessPolicy {
    /// Reads and checks a policy file (see ``AccessPolicy``).
    ///
    /// - Throws: ``DaemonStartError`` naming the file, the line and the problem: invalid JSON, an
    ///   unknown field, a field of the wrong type, an unknown user or group, a malformed prefix, a
    ///   grant that names nobody or grants nothing.
    static func load(path: String, daemonUser: uid_t = getuid()) throws(DaemonStartError) -> AccessPolicy {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw DaemonStartError("cannot read policy file \(path): \(error.localizedDescription)")
        }
        do {
            // Its messages say where the syntax breaks; the decoder's do not.
            _ = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw Self.failure(path, nil, "not valid JSON (\(Self.reason(error)))")
        }
        let document: PolicyDocument
        do {
            let decoder = JSONDecoder()
            decoder.allowsJSON5 = false
            document = try decoder.decode(PolicyDocument.self, from: data)
        } catch let error as DecodingError {
            let lines = JSONLines(String(decoding: data, as: UTF8.self))
            let (message, codingPath) = Self.describe(error)
            throw Self.failure(path, lines.line(of: codingPath), message)
        } catch {
            throw Self.failure(path, nil, "not valid JSON (\(error))")
        }

        // The rest is checked grant by grant; a problem names the line of what it is about.
        var lines: JSONLines?
        func failure(_ message: String, at codingPath: [any CodingKey]) -> DaemonStartError {
            if lines == nil { lines = JSONLines(String(decoding: data, as: UTF8.self)) }
            return Self.failure(path, lines?.line(of: codingPath), message)
        }
        var grants: [Grant] = []
        for (index, entry) in document.grants.enumerated() {
            let grant = "grant \(index + 1)"
            let place: [any CodingKey] = [JSONLines.Key("grants"), JSONLines.Key(index)]
            guard let prefix = entry.prefix else {
                throw failure("\(grant) needs a \"prefix\" string (\"\" for every key)", at: place)
            }
            do throws(SharedStateError) {
                try KeyRules.validatePrefix(prefix)
            } catch {
                throw failure("\(grant): \(error.message)", at: place + [JSONLines.Key("prefix")])
            }
            var ids: [String: Set<UInt32>] = [:]
            for (kind, members) in [("user", entry.users), ("group", entry.groups)] {
                for (position, member) in (members ?? []).enumerated() {
                    switch member {
                    case .id(let id):
                        ids[kind, default: []].insert(id)
                    case .name(let name):
                        guard let id = kind == "user" ? Self.userID(name) : Self.groupID(name) else {
                            let at = place + [JSONLines.Key(kind + "s"), JSONLines.Key(position)]
                            throw failure("\(grant): unknown \(kind) \"\(name)\"", at: at)
                        }
                        ids[kind, default: []].insert(id)
                    }
                }
            }
            let (users, groups) = (ids["user"] ?? [], ids["group"] ?? [])
            if users.isEmpty && groups.isEmpty {
                throw failure("\(grant) names no \"users\" and no \"groups\"", at: place)
            }
            let (read, write) = (entry.read == true, entry.write == true)
            if !read && !write {
                throw failure("\(grant) grants neither \"read\" nor \"write\"", at: place)
            }
            grants.append(Grant(prefix: prefix, users: users, groups: groups, read: read, write: write))
        }
        return AccessPolicy(grants: grants, administrators: [0, daemonUser])
    }

    private static func failure(_ path: String, _ line: Int?, _ message: String) -> DaemonStartError {
        DaemonStartError("policy file \(path)\(line.map { ", line \($0)" } ?? ""): \(message)")
    }

    private static func userID(_ name: String) -> uid_t? {
        getpwnam(name).map { $0.pointee.pw_uid }
    }

    private static func groupID(_ name: String) -> gid_t? {
        getgrnam(name).map { $0.pointee.gr_gid }
    }

    /// A decoding error as a sentence about the policy file, and the path of what it is about.
    private static func describe(_ error: DecodingError) -> (String, [any CodingKey]) {
        switch error {
        case .dataCorrupted(let context) where context.underlyingError != nil || context.codingPath.isEmpty:
            let reason = context.underlyingError.map { Self.reason($0) } ?? context.debugDescription
            return ("not valid JSON (\(reason))", context.codingPath)
        case .dataCorrupted(let context):
            return ("\(Self.place(context.codingPath.dropLast())): \(context.debugDescription)", context.codingPath)
        case .keyNotFound(let key, let context) where context.codingPath.isEmpty:
            return ("the top level must be an object with \"\(key.stringValue)\"", context.codingPath)
        case .keyNotFound(let key, let context):
            return ("\(Self.place(context.codingPath)) needs \"\(key.stringValue)\"", context.codingPath)
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return ("\(Self.place(context.codingPath)) must be \(Self.expected(at: context.codingPath))", context.codingPath)
        @unknown default:
            return ("\(error)", [])
        }
    }

    /// Where `codingPath` points, in the file's own terms: `grant 2: "users"`.
    private static func place(_ codingPath: some Collection<any CodingKey>) -> String {
        var words: [String] = []
        var path = Array(codingPath)
        if path.first?.stringValue == "grants" {
            path.removeFirst()
            if let index = path.first?.intValue {
                path.removeFirst()
                words.append("grant \(index + 1)")
            } else {
                words.append("\"grants\"")
            }
        }
        if let field = path.first(where: { $0.intValue == nil }) { words.append("\"\(field.stringValue)\"") }
        return words.isEmpty ? "the top level" : words.joined(separator: ": ")
    }

    /// What the value at `codingPath` has to be.
    private static func expected(at codingPath: [any CodingKey]) -> String {
        let names = codingPath.filter { $0.intValue == nil }.map(\.stringValue)
        switch (names.last, codingPath.last?.intValue != nil) {
        case (nil, _): return "an object with \"grants\""
        case ("grants", false): return "an array of grants"
        case ("grants", true): return "an object"
        case ("users", _), ("groups", _): return "a list of names or numbers"
        case ("read", _), ("write", _): return "true or false"
        case ("prefix", _): return "a string"
        default: return "of another type"
        }
    }

    private static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        return (nsError.userInfo[NSDebugDescriptionErrorKey] as? String) ?? nsError.localizedDescription
    }
}
