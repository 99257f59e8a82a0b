import Synchronization

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
