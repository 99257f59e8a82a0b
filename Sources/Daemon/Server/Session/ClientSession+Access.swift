import SharedStateWire
import SyncEngine
import Synchronization

/// What this connection's user may do, checked per request under the policy in force.
package extension ClientSession {
    /// What this connection's user may do under the policy in force now.
    var permissions: Permissions { accessCache.current }

    /// The keys a watch or list of this connection may show under `access`; nil when everything
    /// is readable. A reload replaces the filter of every watch (``SocketServer/reapplyAccessPolicy()``).
    func readFilter(_ access: Permissions) -> KeyFilter? {
        access.readFilter
    }

    /// Makes a watch started under `access` see the policy that a reload put in force meanwhile,
    /// if one did: the reload may have passed this connection before the watch was registered.
    func reapplyAccess(since access: Permissions) {
        let now = permissions
        guard now != access else { return }
        engine.restrictWatches(of: writer, to: now.readFilter, who: who)
    }

    func requireRead(_ key: String, _ access: Permissions) throws(SharedStateError) {
        guard access.canRead(key) else { throw denied("read key \(KeyRules.quoted(key))") }
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
    var who: String { record.who }

    static func denied(_ who: String, _ action: String) -> SharedStateError {
        AccessDenial.error(who, action)
    }

    static func readingAnything(under prefix: String) -> String {
        AccessDenial.readingAnything(under: prefix)
    }
}

/// One connection's permissions under the policy in force, worked out again only when a reload
/// replaces the policy: watches consult it for every change they deliver, and working them out
/// filters the policy's grants.
package final class PermissionCache: Sendable {
    private let principal: Principal?
    private let settings: RuntimeSettings
    private let cached = Mutex<(generation: UInt64, permissions: Permissions)?>(nil)

    /// Permissions of `principal`; nil (the kernel did not say who connected) may do nothing.
    init(principal: Principal?, settings: RuntimeSettings) {
        self.principal = principal
        self.settings = settings
    }

    /// The permissions now.
    var current: Permissions {
        let (policy, generation) = settings.policyAndGeneration
        if let cached = cached.withLock({ $0 }), cached.generation == generation { return cached.permissions }
        let permissions = policy.permissions(for: principal)
        cached.withLock { $0 = (generation, permissions) }
        return permissions
    }
}
