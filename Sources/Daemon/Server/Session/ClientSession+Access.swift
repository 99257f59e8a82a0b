import SharedStateWire
import SyncEngine

/// What this connection's user may do, checked per request under the policy in force.
package extension ClientSession {
    /// What this connection's user may do under the policy in force now.
    var permissions: Permissions { accessCache.current }

    /// The keys a watch or list of this connection may show, judged by the policy in force when
    /// each change is delivered (so a reload revokes at once); nil when everything is readable.
    func readFilter(_ access: Permissions) -> KeyFilter? {
        if access.isUnrestricted { return nil }
        let cache = accessCache
        let filter: KeyFilter = { key in cache.current.canRead(key) }
        return filter
    }

    func requireRead(_ key: String, _ access: Permissions) throws(SharedStateError) {
        guard access.canRead(key) else { throw denied("read key \(KeyRules.quoted(key))") }
    }

    /// What ends a watch of `prefixes` after the access policy changed: one of them selecting no
    /// key the user may read any more (as ``requireSomeRead(under:_:)`` refuses a new watch).
    func endingCheck(prefixes: [String]) -> (@Sendable () -> SharedStateError?)? {
        let cache = accessCache
        let who = self.who
        return {
            let access = cache.current
            for prefix in prefixes.isEmpty ? [""] : prefixes where !access.mayReadSome(under: prefix) {
                return Self.denied(who, Self.readingAnything(under: prefix))
            }
            return nil
        }
    }

    /// Fails when one of `prefixes` selects no key the user may read: a list or watch that could
    /// never show anything is refused, as etcd refuses a range it may not read, rather than
    /// answered with silence. A prefix the user may read in part is filtered instead.
    func requireSomeRead(under prefixes: [String], _ access: Permissions) throws(SharedStateError) {
        for prefix in prefixes.isEmpty ? [""] : prefixes where !access.mayReadSome(under: prefix) {
            throw denied(Self.readingAnything(under: prefix))
        }
    }

    func requireWrite(_ key: String, _ access: Permissions) throws(SharedStateError) {
        guard access.canWrite(key) else { throw denied("write key \(KeyRules.quoted(key))") }
    }

    func requireAdministrator(_ action: String, _ access: Permissions) throws(SharedStateError) {
        guard access.isUnrestricted else { throw denied("\(action) (only syncd's own user and root may)") }
    }

    func denied(_ action: String) -> SharedStateError {
        Self.denied(who, action)
    }

    /// Who this connection is, as a denial names it.
    var who: String { record.credentials.map { "user \($0.uid)" } ?? "this client" }

    static func denied(_ who: String, _ action: String) -> SharedStateError {
        SharedStateError(.permissionDenied, "permission denied: \(who) may not \(action)")
    }

    static func readingAnything(under prefix: String) -> String {
        prefix.isEmpty ? "read any key" : "read any key under \(KeyRules.quoted(prefix))"
    }
}
