import Foundation
import SharedStateWire
import SyncEngine

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Who may read and write which keys: grants per key prefix to users and groups.
///
/// ```json
/// {
///   "grants": [
///     { "prefix": "",        "groups": ["syncd"],          "read": true, "write": true },
///     { "prefix": "sensor/", "users": ["thermo", 1001],     "read": true, "write": true },
///     { "prefix": "sensor/", "groups": ["dashboards"],      "read": true }
///   ]
/// }
/// ```
///
/// Users and groups are names or numbers. Everything not granted is denied. syncd's own user and
/// root may do anything, whatever the policy says; without a policy file, only they may.
package struct AccessPolicy: Sendable {
    /// One grant: `prefix` selects keys as a watch prefix does.
    struct Grant: Sendable {
        var prefix: String
        var users: Set<uid_t>
        var groups: Set<gid_t>
        var read: Bool
        var write: Bool

        func applies(to principal: Principal) -> Bool {
            users.contains(principal.uid) || !groups.isDisjoint(with: principal.groups)
        }
    }

    var grants: [Grant]
    /// The users that may do anything.
    var administrators: Set<uid_t>

    /// The policy without a file: only syncd's user and root.
    package static func administratorsOnly(daemonUser: uid_t = getuid()) -> AccessPolicy {
        AccessPolicy(grants: [], administrators: [0, daemonUser])
    }

    /// What `principal` may do.
    /// The permissions of `principal`; of a connection whose user the kernel did not name (nil),
    /// nothing.
    func permissions(for principal: Principal?) -> Permissions {
        principal.map { permissions(for: $0) } ?? .nothing
    }

    func permissions(for principal: Principal) -> Permissions {
        if administrators.contains(principal.uid) { return .unrestricted }
        let applicable = grants.filter { $0.applies(to: principal) }
        return Permissions(
            isUnrestricted: false,
            readPrefixes: applicable.filter(\.read).map(\.prefix),
            writePrefixes: applicable.filter(\.write).map(\.prefix)
        )
    }
}

/// What one principal may do under a policy.
package struct Permissions: Sendable, Hashable {
    /// syncd's own user or root: everything, including administration (clients, compact, backup,
    /// restore).
    var isUnrestricted: Bool
    var readPrefixes: [String]
    var writePrefixes: [String]

    static let unrestricted = Permissions(isUnrestricted: true, readPrefixes: [], writePrefixes: [])

    /// Nothing at all: a connection whose user the kernel did not name.
    static let nothing = Permissions(isUnrestricted: false, readPrefixes: [], writePrefixes: [])

    /// The keys these permissions may read, as the engine filters them; nil for every key.
    var readFilter: KeyFilter? {
        isUnrestricted ? nil : KeyFilter(readablePrefixes: readPrefixes)
    }

    func canRead(_ key: String) -> Bool {
        isUnrestricted || readPrefixes.contains { KeyRules.key(key, hasPrefix: $0) }
    }

    /// Whether some key under `prefix` may be read: a read grant covers the prefix, or lies under it.
    func mayReadSome(under prefix: String) -> Bool {
        isUnrestricted
            || readPrefixes.contains { KeyRules.key(prefix, hasPrefix: $0) || KeyRules.key($0, hasPrefix: prefix) }
    }

    func canWrite(_ key: String) -> Bool {
        isUnrestricted || writePrefixes.contains { KeyRules.key(key, hasPrefix: $0) }
    }
}
