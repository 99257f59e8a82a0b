import Foundation
import SharedStateWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Who a connection acts for: the user and groups of the process that connected.
package struct Principal: Sendable, Hashable {
    var uid: uid_t
    /// The primary group and every group the user belongs to.
    var groups: Set<gid_t>

    /// The principal for peer credentials: the user's groups come from the group database, as
    /// dbus-broker does (the kernel only reports the primary group).
    init(credentials: PeerCredentials) {
        uid = credentials.uid
        groups = Self.groups(of: credentials.uid, primary: credentials.gid)
    }

    init(uid: uid_t, groups: Set<gid_t>) {
        self.uid = uid
        self.groups = groups
    }

    private static func groups(of uid: uid_t, primary: gid_t) -> Set<gid_t> {
        // Reentrant: connections are accepted on several event loops at once.
        guard let name = UserDatabase.userName(of: uid) else { return [primary] }
        var count: Int32 = 64
        var list = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(name, primary, &list, &count) < 0 {
            list = [gid_t](repeating: 0, count: Int(count))
            _ = getgrouplist(name, primary, &list, &count)
        }
        return Set(list.prefix(Int(max(0, count)))).union([primary])
    }
}
